#!/usr/bin/env python3
"""A real PyTorch Lightning job: `Trainer(accelerator="cpu", devices=4, strategy="ddp")` (Gloo,
with the group timeout shortened to 60 s) training a small regression model, with one fault: the
--fault-rank raises ValueError in training_step at --fault-step. Lightning starts the other three
ranks itself (it runs this script again with LOCAL_RANK set; no torchrun), all writing to the same
console. Every rank dumps its flight recorder from the `except` around trainer.fit into
DUMPS/nccl_trace_rank_<global rank>, then re-raises.

    python tests/torch/lightning_job.py --fault-rank 2 --fault-step 3 --dumps DIR
"""

import argparse
import datetime
import os

# The flight recorder records nothing unless its buffer size is set before the first group; the
# ranks Lightning starts inherit it.
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "2000")

import torch  # noqa: E402

import lightning.pytorch as pl  # noqa: E402
from lightning.pytorch.strategies import DDPStrategy  # noqa: E402

# Beside this script, whose folder Python puts first on sys.path (Lightning's other ranks run it
# again as a file): the dump every launcher's job writes when it fails.
import fr_dump  # noqa: E402


class Regression(pl.LightningModule):
    def __init__(self, fault_rank, fault_step):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                       torch.nn.Linear(32, 1))
        self.fault_rank, self.fault_step = fault_rank, fault_step

    def training_step(self, batch, batch_idx):
        if self.global_rank == self.fault_rank and batch_idx == self.fault_step:
            raise ValueError(f"bad batch at step {batch_idx}: label out of range")
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault-rank", type=int, default=2)
    parser.add_argument("--fault-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--dumps", required=True)
    args = parser.parse_args()
    torch.manual_seed(1234)
    x = torch.randn(64 * args.steps, 16)
    data = torch.utils.data.TensorDataset(x, x[:, :1] * 0.5)
    loader = torch.utils.data.DataLoader(data, batch_size=16)
    # strategy="ddp" with Gloo's 30 min default timeout shortened. Not to 5 s as in the other
    # jobs: the same timeout bounds the store's wait for the ranks Lightning starts, which import
    # Lightning for longer than that on a busy machine. The survivors fail on the raising rank's
    # closed connection anyway.
    trainer = pl.Trainer(accelerator="cpu", devices=4,
                         strategy=DDPStrategy(process_group_backend="gloo",
                                              timeout=datetime.timedelta(seconds=60)),
                         max_steps=args.steps, logger=False, enable_checkpointing=False)
    model = Regression(args.fault_rank, args.fault_step)
    try:
        trainer.fit(model, loader)
    except BaseException:
        fr_dump.dump(args.dumps, trainer.global_rank)
        raise


if __name__ == "__main__":
    main()
