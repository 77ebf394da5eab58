// The stand-in's hpu device library, compiled as this one translation unit: each part below includes torch's headers,
// which take most of the compile time, and one unit parses them once (about a third of the CPU time of compiling the
// parts one by one: 22 s of CPU against 65 s for torch 2.13). The parts stay separate files, one idea each.
#include "hpu_device.cpp"
#include "hpu_kernels.cpp"
#include "hpu_fallback.cpp"
#include "hpu_autocast.cpp"
#include "hpu_streams.cpp"
#include "hpu_cuda_hooks.cpp"
