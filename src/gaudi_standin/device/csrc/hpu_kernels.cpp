// Kernels of the stand-in's `hpu` for the ops a CPU kernel cannot serve on host views (allocation, copies between
// devices, views, storage swaps, convolution's device switch); every other aten op runs on the host through the
// fallback (hpu_fallback.cpp). Both see hpu tensors' bytes through host views (hpu_host_views.h).
#include "hpu_host_views.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace lightning_hpu_standin {
namespace {

void check_factory_options(std::optional<at::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided,
              "The stand-in's hpu holds strided tensors only, not ", c10::layout_or_default(layout), ".");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "Only host (CPU) tensors can be pinned, not hpu tensors.");
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  check_factory_options(layout, pin_memory);
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_generic(size, device_allocator(), kDeviceKeys, c10::dtype_or_default(dtype),
                                   memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  check_factory_options(layout, pin_memory);
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(size, stride, device_allocator(), kDeviceKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor host_side(const at::Tensor& tensor) { return tensor.device().type() == kHPU ? host_view(tensor) : tensor; }

// Copies between hpu and host, or between two hpu devices: the bytes are host bytes on both sides.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  host_side(dst).copy_(host_side(self), non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  return at::native::as_strided_tensorimpl(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
      storage_offset ? std::optional<int64_t>(storage_offset->expect_int()) : std::nullopt);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor unfold(const at::Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return at::native::unfold(self, dimension, size, step);
}

at::Tensor view_as_real(const at::Tensor& self) { return at::native::view_as_real(self); }
at::Tensor view_as_complex(const at::Tensor& self) { return at::native::view_as_complex(self); }

const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::native::_local_scalar_dense_cpu(host_view(self));
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source) { return at::native::set_(self, source); }

at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, c10::SymInt storage_offset,
                               c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::native::set_storage_cpu_(self, source, storage_offset.expect_int(), C10_AS_INTARRAYREF_SLOW(size),
                                      C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) { return at::native::set_tensor_(self, source); }

at::Tensor& set_empty(at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  return at::native::set_storage_cpu_(self, empty, 0, {0}, {});
}

// at::convolution sends devices it does not know to convolution_overrideable: run the host's convolution.
at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  HostViews views;
  std::optional<at::Tensor> host_bias;
  if (bias.has_value() && bias->defined()) {
    host_bias = views.view_of(*bias);
  }
  at::Tensor out = at::convolution(views.view_of(input), views.view_of(weight), host_bias, stride, padding, dilation,
                                   transposed, output_padding, groups);
  return views.to_device(out, input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  HostViews views;
  std::vector<int64_t> bias_sizes;
  if (output_mask[2]) {
    bias_sizes.push_back(grad_output.size(1));
  }
  auto grads = at::convolution_backward(
      views.view_of(grad_output), views.view_of(input), views.view_of(weight),
      output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : at::OptionalIntArrayRef(), stride, padding, dilation,
      transposed, output_padding, groups, output_mask);
  const c10::Device device = input.device();
  return {views.to_device(std::get<0>(grads), device), views.to_device(std::get<1>(grads), device),
          views.to_device(std::get<2>(grads), device)};
}

}  // namespace

at::Tensor host_view(const at::Tensor& device_tensor) {
  TORCH_CHECK(device_tensor.device().type() == kHPU, "host_view expects an hpu tensor, got one on ",
              device_tensor.device());
  // The host storage keeps the device storage (and so its bytes) alive.
  c10::Storage device = device_tensor.storage();
  void* data = const_cast<void*>(device.data());
  const size_t nbytes = device.nbytes();
  // A view past the bytes there are would hand host code memory that is not the tensor's: a fake or meta tensor
  // (TorchDynamo traces with those) has no bytes, a storage resized to 0 (FSDP frees parameters so) has none left.
  size_t needed = 0;
  if (device_tensor.numel() > 0) {
    int64_t last = device_tensor.storage_offset();
    for (int64_t dim = 0; dim < device_tensor.dim(); ++dim) {
      last += (device_tensor.size(dim) - 1) * device_tensor.stride(dim);
    }
    needed = static_cast<size_t>(last + 1) * device_tensor.itemsize();
  }
  TORCH_CHECK(needed == 0 || (data != nullptr && needed <= nbytes), "host_view: the hpu tensor needs ", needed,
              " bytes of its storage, which holds ", data == nullptr ? 0 : nbytes,
              " (a fake or meta tensor has none, a storage resized to 0 has none left); view a tensor with memory.");
  struct Owner {
    c10::Storage storage;
  };
  c10::DataPtr host_ptr(data, new Owner{std::move(device)}, [](void* owner) { delete static_cast<Owner*>(owner); },
                        c10::Device(c10::DeviceType::CPU));
  c10::Storage host(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), nbytes,
                                                          std::move(host_ptr), nullptr, /*resizable=*/false));
  return tensor_on(std::move(host), kHostKeys, device_tensor, false);
}

}  // namespace lightning_hpu_standin

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace lightning_hpu_standin;
  static const std::unordered_set<std::string> own_kernels = {
      "empty.memory_format", "empty_strided", "_copy_from", "_copy_from_and_resize", "copy_", "as_strided", "view",
      "_reshape_alias", "unfold", "view_as_real", "view_as_complex", "resize_", "_local_scalar_dense",
      "set_.source_Storage", "set_.source_Storage_storage_offset", "set_.source_Tensor", "set_",
      "convolution_overrideable", "convolution_backward_overrideable"};
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("unfold", TORCH_FN(unfold));
  m.impl("view_as_real", TORCH_FN(view_as_real));
  m.impl("view_as_complex", TORCH_FN(view_as_complex));
  m.impl("resize_", TORCH_FN(resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("set_.source_Storage", TORCH_FN(set_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
  send_composite_ops_to_host(m, own_kernels);
}

// copy_ reaches a device through _copy_from, which must see the conjugate and negative bits (the host copy
// resolves them); without these fallthroughs their fallbacks materialise by cloning, which copies again, forever.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
