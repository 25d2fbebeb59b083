// fr-analyze: the command line. Placeholder until the load stage lands.
#include <cstdio>

int main(int argc, char** argv) {
  std::fprintf(stderr, "fr-analyze: not written yet\n");
  return 2;
}
