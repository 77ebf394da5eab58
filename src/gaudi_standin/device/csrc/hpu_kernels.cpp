// Kernels of the stand-in's `hpu`: every aten op runs its CPU kernel on host views of the hpu tensors' bytes (no
// copies), and its results come back as hpu tensors. A few ops that a CPU kernel cannot serve (allocation, copies
// between devices, views, storage swaps, convolution's device switch) have kernels of their own.
//
// The fallback keeps the device's rule that tensors of one op live on one device: an hpu tensor next to a host
// tensor with at least one dimension, or next to a tensor on another hpu, is refused with torch's usual message.
// 0-dim host tensors pass (as torch allows for CUDA), and so do host index tensors.
#include "hpu_device.h"

#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace lightning_hpu_standin {
namespace {

const c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::HPU);
const c10::DispatchKeySet kHostKeys(c10::DispatchKey::CPU);

void copy_geometry(c10::TensorImpl* target, const at::Tensor& source) {
  target->set_sizes_and_strides(source.sizes(), source.strides(), source.storage_offset());
  if (source.is_conj()) {
    target->_set_conj(true);
  }
  if (source.is_neg()) {
    target->_set_neg(true);
  }
}

at::Tensor tensor_on(c10::Storage storage, c10::DispatchKeySet keys, const at::Tensor& geometry, bool view) {
  auto impl = view ? c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW, std::move(storage), keys,
                                                          geometry.dtype())
                   : c10::make_intrusive<c10::TensorImpl>(std::move(storage), keys, geometry.dtype());
  copy_geometry(impl.get(), geometry);
  return at::Tensor(std::move(impl));
}

// The host views of one op call: one host storage per device storage it touches (so a host view that a kernel
// returns can be traced back to its device storage), and the host storages it allocated, adopted as device
// memory once each.
class HostViews {
 public:
  at::Tensor view_of(const at::Tensor& device_tensor) {
    return tensor_on(host_storage_for(device_tensor.storage()), kHostKeys, device_tensor, false);
  }

  // An output argument that the CPU kernel resized gets new host memory: the device storage takes it over.
  void adopt_reallocations() {
    for (Alias& alias : aliases_) {
      c10::StorageImpl* host = alias.host.unsafeGetStorageImpl();
      c10::StorageImpl* device = alias.device.unsafeGetStorageImpl();
      if (host->data_ptr().get() != alias.data) {
        const size_t nbytes = host->nbytes();
        c10::DataPtr fresh = host->set_data_ptr(c10::DataPtr(nullptr, c10::Device(c10::DeviceType::CPU)));
        device->set_data_ptr_noswap(adopt_host_data(std::move(fresh), nbytes, alias.device.device().index()));
        device->set_nbytes(nbytes);
        host->set_data_ptr_noswap(keeping_alive(device->mutable_data(), alias.device));
        alias.data = device->data();
      } else if (host->nbytes() != device->nbytes()) {
        device->set_nbytes(host->nbytes());
      }
    }
  }

  // A host tensor a CPU kernel returned, as an hpu tensor on `device` (a view when it views an argument).
  at::Tensor to_device(const at::Tensor& result, c10::Device device) {
    if (!result.defined() || result.device().type() != c10::DeviceType::CPU) {
      return result;
    }
    const c10::StorageImpl* host = result.storage().unsafeGetStorageImpl();
    for (const Alias& alias : aliases_) {
      if (alias.host.unsafeGetStorageImpl() == host) {
        return tensor_on(alias.device, kDeviceKeys, result, true);
      }
    }
    for (const auto& adopted : adopted_) {
      if (adopted.first == host) {
        return tensor_on(adopted.second, kDeviceKeys, result, true);
      }
    }
    c10::Storage host_storage = result.storage();
    const size_t nbytes = host_storage.nbytes();
    c10::Storage storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes, adopt_host_storage(host_storage, nbytes, device.index()),
        device_allocator(), /*resizable=*/true));
    adopted_.emplace_back(host, storage);
    return tensor_on(storage, kDeviceKeys, result, false);
  }

  bool views(const c10::StorageImpl* host) const {
    for (const Alias& alias : aliases_) {
      if (alias.host.unsafeGetStorageImpl() == host) {
        return true;
      }
    }
    return false;
  }

 private:
  struct Alias {
    c10::Storage device;
    c10::Storage host;
    const void* data;
  };

  c10::Storage host_storage_for(const c10::Storage& device) {
    for (const Alias& alias : aliases_) {
      if (alias.device.unsafeGetStorageImpl() == device.unsafeGetStorageImpl()) {
        return alias.host;
      }
    }
    void* data = const_cast<void*>(device.data());
    // Resizable, so a CPU kernel may resize an output argument.
    c10::Storage host(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), device.nbytes(),
                                                            keeping_alive(data, device),
                                                            c10::GetDefaultCPUAllocator(), /*resizable=*/true));
    aliases_.push_back({device, host, data});
    return host;
  }

  // A host pointer to `data` that keeps the device storage owning it alive for as long as the host view lives: a
  // kernel that keeps its arguments past the call (an asynchronous c10d collective called directly, whose gloo work
  // runs after the caller dropped its tensors) then never reads or writes freed device memory.
  static c10::DataPtr keeping_alive(void* data, const c10::Storage& device) {
    return c10::DataPtr(data, new c10::Storage(device), &release_storage, c10::Device(c10::DeviceType::CPU));
  }

  static void release_storage(void* context) { delete static_cast<c10::Storage*>(context); }

  std::vector<Alias> aliases_;
  std::vector<std::pair<const c10::StorageImpl*, c10::Storage>> adopted_;
};

[[noreturn]] void refuse_mixed_devices(c10::Device first, c10::Device second, const c10::OperatorHandle& op) {
  TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ", first, " and ",
              second, "! (when checking argument for ", op.schema().operator_name(), ")");
}

// The arguments of one call: which device it runs on, and the host views handed to the CPU kernel.
class CallArguments {
 public:
  CallArguments(const c10::OperatorHandle& op, HostViews& views) : op_(op), views_(views) {}

  // host_allowed: the argument may be a host tensor next to hpu ones (as an index the bridge reads from the host).
  c10::IValue to_host(const c10::IValue& value, bool mutated, bool host_allowed = false) {
    if (value.isTensor()) {
      return c10::IValue(tensor_to_host(value.toTensor(), mutated, host_allowed));
    }
    if (value.isTensorList()) {
      return c10::IValue(list_to_host(value.toTensorList(), mutated));
    }
    if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> host;
      for (const std::optional<at::Tensor>& item : value.toOptionalTensorList()) {
        host.push_back(item.has_value() ? std::optional<at::Tensor>(tensor_to_host(*item, mutated, true)) : item);
      }
      return c10::IValue(std::move(host));
    }
    if (value.isList() && !value.toListRef().empty() && value.toListRef()[0].isTensorList()) {
      c10::impl::GenericList host(value.toList().elementType());
      for (const c10::IValue& item : value.toListRef()) {
        host.push_back(item.isTensorList() ? c10::IValue(list_to_host(item.toTensorList(), mutated)) : item);
      }
      return c10::IValue(std::move(host));
    }
    if (value.isDevice() && value.toDevice().type() == kHPU) {
      note_device(value.toDevice());
      return c10::IValue(c10::Device(c10::DeviceType::CPU));
    }
    return value;
  }

  void check_devices() const {
    if (device_ && host_) {
      refuse_mixed_devices(*device_, *host_, op_);
    }
  }

  std::optional<c10::Device> device() const {
    if (device_ && device_->index() < 0) {
      return c10::Device(kHPU, current_device());
    }
    return device_;
  }

  // The hpu tensor an output is, when the kernel returned one of the host views it was given.
  std::optional<at::Tensor> original_of(const at::Tensor& result) const {
    for (const auto& pair : pairs_) {
      if (pair.second.unsafeGetTensorImpl() == result.unsafeGetTensorImpl()) {
        return pair.first;
      }
    }
    return std::nullopt;
  }

  // A kernel that resized or restrided a mutated argument's host view: the hpu tensor takes the same geometry.
  void sync_mutated_geometry() const {
    for (size_t i = 0; i < pairs_.size(); ++i) {
      if (!mutated_[i]) {
        continue;
      }
      const at::Tensor& device = pairs_[i].first;
      const at::Tensor& host = pairs_[i].second;
      TORCH_INTERNAL_ASSERT(views_.views(host.storage().unsafeGetStorageImpl()), "The stand-in's hpu fallback: ",
                            op_.schema().operator_name(), " replaced the storage of an argument.");
      if (device.sizes() != host.sizes() || device.strides() != host.strides() ||
          device.storage_offset() != host.storage_offset()) {
        device.unsafeGetTensorImpl()->set_sizes_and_strides(host.sizes(), host.strides(), host.storage_offset());
      }
    }
  }

 private:
  at::Tensor tensor_to_host(const at::Tensor& tensor, bool mutated, bool host_allowed) {
    if (!tensor.defined()) {
      return tensor;
    }
    if (tensor.device().type() != kHPU) {
      if (!host_allowed && tensor.dim() > 0 && !host_) {
        host_ = tensor.device();
      }
      return tensor;
    }
    note_device(tensor.device());
    at::Tensor host = views_.view_of(tensor);
    pairs_.emplace_back(tensor, host);
    mutated_.push_back(mutated);
    return host;
  }

  c10::List<at::Tensor> list_to_host(const c10::List<at::Tensor>& list, bool mutated) {
    c10::List<at::Tensor> host;
    host.reserve(list.size());
    for (const at::Tensor& tensor : list) {
      host.push_back(tensor_to_host(tensor, mutated, false));
    }
    return host;
  }

  void note_device(c10::Device device) {
    if (!device_) {
      device_ = device;
    } else if (device.index() >= 0 && device_->index() >= 0 && device.index() != device_->index()) {
      refuse_mixed_devices(*device_, device, op_);
    }
  }

  const c10::OperatorHandle& op_;
  HostViews& views_;
  std::optional<c10::Device> device_;
  std::optional<c10::Device> host_;
  std::vector<std::pair<at::Tensor, at::Tensor>> pairs_;
  std::vector<bool> mutated_;
};

c10::IValue result_to_device(const c10::IValue& value, c10::Device device, const CallArguments& args,
                             HostViews& views) {
  auto convert = [&](const at::Tensor& tensor) {
    if (auto original = args.original_of(tensor)) {
      return *original;
    }
    return views.to_device(tensor, device);
  };
  if (value.isTensor()) {
    return c10::IValue(convert(value.toTensor()));
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& tensor : value.toTensorList()) {
      out.push_back(convert(tensor));
    }
    return c10::IValue(std::move(out));
  }
  if (value.isList() && !value.toListRef().empty() && value.toListRef()[0].isTensorList()) {
    c10::impl::GenericList out(value.toList().elementType());
    for (const c10::IValue& item : value.toListRef()) {
      out.push_back(item.isTensorList() ? result_to_device(item, device, args, views) : item);
    }
    return c10::IValue(std::move(out));
  }
  return value;
}

// trunc, floor and ceil of a bool tensor: the bridge's kernel (hpu_ops/backend/roundingfunc_gen.cpp) runs
// `identity` for every integral dtype, bool included, where the CPU kernels refuse bool.
bool rounds_bool(const c10::FunctionSchema& schema, const torch::jit::Stack& stack, size_t first) {
  static const std::unordered_set<std::string> rounding = {"aten::trunc", "aten::trunc_", "aten::floor",
                                                           "aten::floor_", "aten::ceil", "aten::ceil_"};
  if (rounding.count(schema.name()) == 0) {
    return false;
  }
  const c10::IValue& self = stack[first];
  return self.isTensor() && self.toTensor().scalar_type() == at::ScalarType::Bool;
}

void round_bool_on_host(const c10::FunctionSchema& schema, torch::jit::Stack* stack, size_t first) {
  const at::Tensor self = (*stack)[first].toTensor();
  const size_t num_arguments = schema.arguments().size();
  at::Tensor result;
  if (schema.overload_name() == "out") {
    result = (*stack)[first + num_arguments - 1].toTensor();
    result.resize_(self.sizes());
    result.copy_(self);
  } else {
    result = schema.name().back() == '_' ? self : self.clone();
  }
  torch::jit::drop(*stack, num_arguments);
  torch::jit::push(*stack, result);
}

// index_copy_(self, dim, index, source) whose source shares memory with self (a KV cache copying one of its own
// rows): the bridge's kernel reads the source before it writes, as a graph op on the device does, where the CPU
// kernel refuses the overlap. The source is read first here too, into a copy.
void read_source_first(torch::jit::Stack* stack, size_t first) {
  const at::Tensor self = (*stack)[first].toTensor();
  c10::IValue& source = (*stack)[first + 3];
  if (source.isTensor() && at::get_overlap_status(self, source.toTensor()) != at::MemOverlapStatus::No) {
    source = c10::IValue(source.toTensor().clone());
  }
}

// Runs any aten op on the host: the CPU kernel sees host views of the hpu arguments, its results become hpu
// tensors on the op's device.
void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_arguments = schema.arguments().size();
  const size_t first = stack->size() - num_arguments;
  HostViews views;
  CallArguments args(op, views);
  // The bridge's index_copy takes its index from the host too (indexing ops take host indices in Tensor?[] lists).
  const bool host_index = schema.name() == "aten::index_copy_" || schema.name() == "aten::index_copy";
  for (size_t i = 0; i < num_arguments; ++i) {
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    c10::IValue& value = (*stack)[first + i];
    const bool host_allowed = host_index && schema.arguments()[i].name() == "index";
    value = args.to_host(value, alias != nullptr && alias->isWrite(), host_allowed);
  }
  args.check_devices();
  if (host_index && schema.overload_name().empty() && schema.name() == "aten::index_copy_") {
    read_source_first(stack, first);
  }

  if (rounds_bool(schema, *stack, first)) {
    round_bool_on_host(schema, stack, first);
  } else {
    op.redispatchBoxed(kHostKeys, stack);
  }

  views.adopt_reallocations();
  args.sync_mutated_geometry();
  const std::optional<c10::Device> device = args.device();
  if (!device) {
    return;
  }
  const size_t num_returns = schema.returns().size();
  for (size_t i = stack->size() - num_returns; i < stack->size(); ++i) {
    (*stack)[i] = result_to_device((*stack)[i], *device, args, views);
  }
}

// ------------------------------------------------------------------------------------------------ own kernels
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

// Ops that have a CPU kernel and also a CompositeExplicitAutograd one would take the composite path on hpu (a meta
// function, an empty output, then the out= kernel): send them straight to their CPU kernel instead.
void send_composite_ops_to_host(torch::Library& library, const std::unordered_set<std::string>& own_kernels) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) {
      continue;
    }
    const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
    if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU)) {
      continue;
    }
    if (!op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) {
      continue;
    }
    std::string qualified = name.name.substr(6);
    if (!name.overload_name.empty()) {
      qualified += "." + name.overload_name;
    }
    if (own_kernels.count(qualified) == 0) {
      library.impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&run_on_host>());
    }
  }
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

TORCH_LIBRARY_IMPL(_, HPU, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&lightning_hpu_standin::run_on_host>());
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
