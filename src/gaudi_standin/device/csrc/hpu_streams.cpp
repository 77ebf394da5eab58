// Streams and events of the stand-in's `hpu`, served to torch through the device guard (hpu_device.cpp) and to the
// emulated bridge through control ops (`torch.ops.lightning_hpu_standin.*_stream`).
//
// Every op of the stand-in runs synchronously on the host, so whatever was issued on any stream has finished when
// the call returns: a stream is an id (0 is each HPU's default stream; every new stream gets the next id, as the
// bridge creates a device stream per request), and an event is complete once recorded, keeping a host timestamp
// for elapsed time. The device's rules still hold: streams and events are the HPU's (a host stream is refused),
// an event stays on the HPU it was first recorded on, and only streams this process created exist.
#include "hpu_device.h"

#include <torch/library.h>

#include <array>
#include <atomic>
#include <chrono>

namespace lightning_hpu_standin {
namespace {

constexpr c10::StreamId kDefaultStream = 0;
std::atomic<c10::StreamId> g_next_stream{kDefaultStream + 1};
// The calling thread's current stream of each HPU (zero-initialised: the default streams).
thread_local std::array<c10::StreamId, kMaxDevices> t_current_streams{};

struct HostEvent {
  c10::StreamId stream;
  c10::EventFlag flag;
  std::chrono::steady_clock::time_point recorded_at;
};

c10::DeviceIndex resolve(c10::Device device) {
  check_device(device);
  return device.has_index() ? device.index() : current_device();
}

c10::Stream make_stream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kHPU, device), id);
}

// --- control ops -----------------------------------------------------------------------------------------
c10::Stream op_current_stream(int64_t device) {
  return current_stream(resolve(c10::Device(kHPU, static_cast<c10::DeviceIndex>(device))));
}
c10::Stream op_default_stream(int64_t device) {
  return default_stream(c10::Device(kHPU, static_cast<c10::DeviceIndex>(device)));
}
void op_set_stream(c10::Stream stream) { exchange_stream(stream); }
// Elapsed time between two hpu events given by their `event_id`s, with torch's checks (torch's own binding refuses
// subclasses of torch.Event, such as torch.hpu.Event, as the end event).
double op_event_elapsed_time(int64_t start, int64_t end) {
  TORCH_CHECK(start != 0 && end != 0, "Both events must be recorded before calculating elapsed time.");
  auto* start_event = reinterpret_cast<HostEvent*>(start);
  auto* end_event = reinterpret_cast<HostEvent*>(end);
  TORCH_CHECK_VALUE(start_event->flag == c10::EventFlag::BACKEND_DEFAULT &&
                        end_event->flag == c10::EventFlag::BACKEND_DEFAULT,
                    "Both events must be created with argument 'enable_timing=True'.");
  return elapsed_milliseconds(start_event, end_event);
}

// `tensor.record_stream(stream)`: memory is freed synchronously, so nothing waits; the stream must be an HPU's.
void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == kHPU, "record_stream: an hpu tensor can be recorded on an hpu stream only, not",
              " on ", stream, "; pass torch.hpu.current_stream() or a torch.hpu.Stream.");
  check_stream(stream);
}

}  // namespace

c10::Stream current_stream(c10::DeviceIndex device) {
  check_device(c10::Device(kHPU, device));
  return make_stream(device, t_current_streams[device]);
}

c10::Stream default_stream(c10::Device device) { return make_stream(resolve(device), kDefaultStream); }

c10::Stream new_stream(c10::Device device) { return make_stream(resolve(device), g_next_stream.fetch_add(1)); }

c10::Stream exchange_stream(c10::Stream stream) {
  check_stream(stream);
  const c10::Stream previous = current_stream(stream.device_index());
  t_current_streams[stream.device_index()] = stream.id();
  return previous;
}

void check_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == kHPU, "Expected a stream of an hpu device, got ", stream, ".");
  TORCH_CHECK(stream.device_index() >= 0, "An hpu stream needs a device index, got ", stream, ".");
  check_device(stream.device());
  TORCH_CHECK(stream.id() >= kDefaultStream && stream.id() < g_next_stream.load(), "Unknown hpu stream id ",
              stream.id(), ": create streams with torch.hpu.Stream() or torch.Stream(device=\"hpu\").");
}

void record_event(void** event, const c10::Stream& stream, c10::DeviceIndex event_device, c10::EventFlag flag) {
  check_stream(stream);
  TORCH_CHECK(event_device == -1 || event_device == stream.device_index(), "Event device index ",
              static_cast<int>(event_device), " does not match recording stream's device index ",
              static_cast<int>(stream.device_index()), ".");
  auto* host = static_cast<HostEvent*>(*event);
  if (host == nullptr) {
    host = new HostEvent{stream.id(), flag, {}};
    *event = host;
  }
  host->stream = stream.id();
  host->recorded_at = std::chrono::steady_clock::now();
}

void destroy_event(void* event) noexcept { delete static_cast<HostEvent*>(event); }

double elapsed_milliseconds(void* start, void* end) {
  TORCH_CHECK(start != nullptr && end != nullptr, "Both events must be recorded before calculating elapsed time.");
  const auto elapsed = static_cast<HostEvent*>(end)->recorded_at - static_cast<HostEvent*>(start)->recorded_at;
  return std::chrono::duration<double, std::milli>(elapsed).count();
}

}  // namespace lightning_hpu_standin

TORCH_LIBRARY_FRAGMENT(lightning_hpu_standin, m) {
  using namespace lightning_hpu_standin;
  m.def("current_stream(int device) -> Stream", &op_current_stream);
  m.def("default_stream(int device) -> Stream", &op_default_stream);
  m.def("set_stream(Stream stream) -> ()", &op_set_stream);
  m.def("event_elapsed_time(int start, int end) -> float", &op_event_elapsed_time);
}

TORCH_LIBRARY_IMPL(aten, HPU, m) { m.impl("record_stream", TORCH_FN(lightning_hpu_standin::record_stream)); }
