"""Alembic's entry point for the console's migrations, run by Store.migrate() on the connection it
passes (never from alembic.ini: the console has no configuration file)."""

from alembic import context

from fr_analyze.console._schema import metadata

connection = context.config.attributes["connection"]
# Batch mode lets later migrations alter SQLite tables (which cannot ALTER most columns).
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
