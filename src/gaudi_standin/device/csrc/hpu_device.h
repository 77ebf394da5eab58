// The CPU stand-in's `hpu` device: shared declarations of the device core (hpu_device.cpp), streams and events
// (hpu_streams.cpp), the kernels (hpu_kernels.cpp, hpu_fallback.cpp over hpu_host_views.h) and HPU autocast
// (hpu_autocast.cpp).
//
// Tensors on `hpu:N` keep their bytes in host memory, but they are tensors of torch's own HPU device type: they
// carry the HPU dispatch key, report `device(type='hpu', index=N)`, are refused next to host tensors, and their
// bytes are counted per device. This library is loaded only by the CPU stand-in, never next to the Intel Gaudi
// bridge (which registers the HPU device itself).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>

#include <cstdint>

namespace lightning_hpu_standin {

constexpr c10::DeviceType kHPU = c10::DeviceType::HPU;
// The most HPUs the stand-in emulates in one process.
constexpr int kMaxDevices = 64;

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

// --- streams and events (hpu_streams.cpp) -------------------------------------------------------------
// Every op runs synchronously on the host, so work on any stream is complete when it returns: streams are ids that
// torch's stream API can pass around and check, and an event is complete once recorded (it keeps a host timestamp).
// The calling thread's current stream of an HPU (the default stream, id 0, until the thread sets another).
c10::Stream current_stream(c10::DeviceIndex device);
// The default stream of an HPU (id 0).
c10::Stream default_stream(c10::Device device);
// A new stream of an HPU (each call creates one, as the bridge does).
c10::Stream new_stream(c10::Device device);
// Make `stream` its HPU's current stream on the calling thread; returns the previous one.
c10::Stream exchange_stream(c10::Stream stream);
// Refuses a stream that is not a stream of an emulated HPU that this process created.
void check_stream(const c10::Stream& stream);
// Record `*event` (created on first use) on `stream`; an event stays with the HPU it was first recorded on.
void record_event(void** event, const c10::Stream& stream, c10::DeviceIndex event_device, c10::EventFlag flag);
void destroy_event(void* event) noexcept;
// Milliseconds between two recorded events.
double elapsed_milliseconds(void* start, void* end);

// --- kernels -------------------------------------------------------------------------------------------
// A host (CPU) tensor viewing the same bytes as an hpu tensor, keeping its storage alive.
at::Tensor host_view(const at::Tensor& device_tensor);

}  // namespace lightning_hpu_standin
