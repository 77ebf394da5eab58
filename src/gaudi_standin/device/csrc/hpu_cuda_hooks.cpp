// Makes HPU torch's accelerator on a CUDA build of torch (PyPI's Linux builds, which run without a GPU).
//
// torch accepts one compiled-in accelerator and asks the hooks of each backend whether it is built, CUDA first. A
// CUDA build registers CUDA's hooks, whose answer is always yes: autograd would then ask CUDA for the streams of hpu
// tensors and fail for want of a CUDA driver. This file registers, above torch's own, hooks that answer as a CPU
// build's do ("CUDA is not built"), so that the stand-in's HPU hooks (hpu_device.cpp) are the accelerator's, as on
// a CPU build. torch creates its CUDA hooks object once, when torch._C initialises: the replacement counts only in a
// process that loaded this library before that (gaudi_standin.startup.early_load does), and CUDA is off in that
// process.
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/library.h>

#include <memory>

namespace lightning_hpu_standin {
namespace {

constexpr const char* kCudaHooksKey = "CUDAHooks";

// torch's CUDAHooksInterface as it is: every question answered as in a build without CUDA.
struct CudaNotBuiltHooks final : public at::CUDAHooksInterface {
  explicit CudaNotBuiltHooks(at::CUDAHooksArgs) {}
};

bool prefer_cuda_not_built() {
  if (!at::CUDAHooksRegistry()->Has(kCudaHooksKey)) {
    return false;  // a CPU build of torch, or torch's CUDA library is not loaded yet: nothing to replace
  }
  at::CUDAHooksRegistry()->Register(
      kCudaHooksKey,
      [](at::CUDAHooksArgs args) -> std::unique_ptr<at::CUDAHooksInterface> {
        return std::make_unique<CudaNotBuiltHooks>(args);
      },
      c10::REGISTRY_PREFERRED);
  return true;
}

// Whether this library registered its hooks when it loaded (they are torch's only if that was before torch._C
// initialised; torch.accelerator tells).
const bool g_cuda_hooks_registered = prefer_cuda_not_built();

bool op_cuda_hooks_registered() { return g_cuda_hooks_registered; }

}  // namespace
}  // namespace lightning_hpu_standin

TORCH_LIBRARY_FRAGMENT(lightning_hpu_standin, m) {
  m.def("cuda_hooks_registered() -> bool", &lightning_hpu_standin::op_cuda_hooks_registered);
}
