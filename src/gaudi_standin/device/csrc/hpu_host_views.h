// Host views of hpu tensors, shared by the stand-in's kernels (hpu_kernels.cpp) and its fallback (hpu_fallback.cpp):
// a CPU kernel runs on host tensors viewing the hpu tensors' bytes (no copies), and the host tensors it returns come
// back as hpu tensors.
#pragma once

#include "hpu_device.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/CPUAllocator.h>
#include <torch/library.h>

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace lightning_hpu_standin {

inline const c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::HPU);
inline const c10::DispatchKeySet kHostKeys(c10::DispatchKey::CPU);

inline void copy_geometry(c10::TensorImpl* target, const at::Tensor& source) {
  target->set_sizes_and_strides(source.sizes(), source.strides(), source.storage_offset());
  if (source.is_conj()) {
    target->_set_conj(true);
  }
  if (source.is_neg()) {
    target->_set_neg(true);
  }
}

inline at::Tensor tensor_on(c10::Storage storage, c10::DispatchKeySet keys, const at::Tensor& geometry, bool view) {
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

// Runs any aten op on the host: the CPU kernel sees host views of the hpu arguments, its results become hpu tensors
// on the op's device (hpu_fallback.cpp, the device's fallback kernel).
void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Sends the aten ops that have a CPU kernel and a composite one, except `own_kernels`, to their CPU kernel.
void send_composite_ops_to_host(torch::Library& library, const std::unordered_set<std::string>& own_kernels);

}  // namespace lightning_hpu_standin
