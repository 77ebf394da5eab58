// The fallback kernel of the stand-in's `hpu`: every aten op without a kernel of its own (hpu_kernels.cpp) runs its CPU
// kernel on host views of the hpu tensors' bytes (no copies), and its results come back as hpu tensors.
//
// It keeps the device's rule that tensors of one op live on one device: an hpu tensor next to a host tensor with at
// least one dimension, or next to a tensor on another hpu, is refused with torch's usual message. 0-dim host tensors
// pass (as torch allows for CUDA), and so do host index tensors. Where the bridge's kernel accepts what the CPU
// kernel refuses (rounding a bool tensor, index_copy_ from an overlapping source), it runs as the bridge's does.
#include "hpu_host_views.h"

#include <ATen/MemoryOverlap.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace lightning_hpu_standin {
namespace {

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

}  // namespace

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

}  // namespace lightning_hpu_standin

TORCH_LIBRARY_IMPL(_, HPU, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&lightning_hpu_standin::run_on_host>());
}
