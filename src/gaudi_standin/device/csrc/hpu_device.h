// The CPU stand-in's `hpu` device: shared declarations of the device core (hpu_device.cpp), the kernels
// (hpu_kernels.cpp) and HPU autocast (hpu_autocast.cpp).
//
// Tensors on `hpu:N` keep their bytes in host memory, but they are tensors of torch's own HPU device type: they
// carry the HPU dispatch key, report `device(type='hpu', index=N)`, are refused next to host tensors, and their
// bytes are counted per device. This library is loaded only by the CPU stand-in, never next to the Intel Gaudi
// bridge (which registers the HPU device itself).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Storage.h>

#include <cstdint>

namespace lightning_hpu_standin {

constexpr c10::DeviceType kHPU = c10::DeviceType::HPU;

// --- devices -------------------------------------------------------------------------------------------
// Number of emulated HPUs (LIGHTNING_HPU_CPU_DEVICES, read once when the library loads).
c10::DeviceIndex device_count();
// The calling thread's current HPU: the one it set, else the process's (the module it is bound to).
c10::DeviceIndex current_device();
// Refuses an index outside the emulated devices with torch's usual wording.
void check_device(c10::Device device);

// --- memory --------------------------------------------------------------------------------------------
// The device allocator: host memory, tagged with the current HPU and counted in that device's statistics.
c10::Allocator* device_allocator();
// A device DataPtr over host memory that `keep_alive` owns (a host storage a CPU kernel allocated), counted as
// `nbytes` of device `device` until it is freed.
c10::DataPtr adopt_host_storage(c10::Storage keep_alive, size_t nbytes, c10::DeviceIndex device);
// The same for a host DataPtr taken over from a host storage (a CPU kernel reallocated an output).
c10::DataPtr adopt_host_data(c10::DataPtr host, size_t nbytes, c10::DeviceIndex device);

// --- kernels -------------------------------------------------------------------------------------------
// A host (CPU) tensor viewing the same bytes as an hpu tensor, keeping its storage alive.
at::Tensor host_view(const at::Tensor& device_tensor);

}  // namespace lightning_hpu_standin
