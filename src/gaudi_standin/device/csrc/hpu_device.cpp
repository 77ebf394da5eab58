// The device core of the stand-in's `hpu`: device guard, counting allocator, HPU hooks, and the control ops the
// Python side calls (`torch.ops.lightning_hpu_standin.*`).
#include "hpu_device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/HPUHooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace lightning_hpu_standin {
namespace {

c10::DeviceIndex read_device_count() {
  // The Python side validated LIGHTNING_HPU_CPU_DEVICES before loading this library.
  const char* raw = std::getenv("LIGHTNING_HPU_CPU_DEVICES");
  int count = (raw != nullptr && *raw != '\0') ? std::atoi(raw) : 1;
  return static_cast<c10::DeviceIndex>(std::clamp(count, 1, kMaxDevices));
}

// The stand-in backend sets it again when it is created (tests create backends with other counts).
std::atomic<c10::DeviceIndex> g_device_count{read_device_count()};
// The process's device (the module it is bound to) and the calling thread's choice, if it made one.
std::atomic<c10::DeviceIndex> g_process_device{0};
thread_local c10::DeviceIndex t_device = -1;

// ---------------------------------------------------------------------------------------------- statistics
struct DeviceMemory {
  std::atomic<int64_t> in_use{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocs{0};
  std::atomic<int64_t> frees{0};
  std::atomic<int64_t> max_alloc{0};
};
std::array<DeviceMemory, kMaxDevices> g_memory;
std::atomic<int64_t> g_limit{0};  // bytes per device; 0 = no limit

void raise_to(std::atomic<int64_t>& value, int64_t candidate) {
  int64_t seen = value.load();
  while (candidate > seen && !value.compare_exchange_weak(seen, candidate)) {
  }
}

void record_alloc(c10::DeviceIndex device, int64_t nbytes) {
  DeviceMemory& memory = g_memory[device];
  const int64_t in_use = memory.in_use.fetch_add(nbytes) + nbytes;
  const int64_t limit = g_limit.load();
  if (limit > 0 && in_use > limit) {
    memory.in_use.fetch_sub(nbytes);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "HPU out of memory: tried to allocate ", nbytes, " bytes on hpu:",
                     static_cast<int>(device), ", which has ", in_use - nbytes, " of ", limit,
                     " bytes in use (the emulated device's HBM).");
  }
  raise_to(memory.peak, in_use);
  raise_to(memory.max_alloc, nbytes);
  memory.allocs.fetch_add(1);
}

void record_free(c10::DeviceIndex device, int64_t nbytes) {
  g_memory[device].in_use.fetch_sub(nbytes);
  g_memory[device].frees.fetch_add(1);
}

// One allocation of device memory: host bytes owned either by a host DataPtr or by a host storage.
struct DeviceBlock {
  c10::DataPtr host;
  c10::Storage keep_alive;
  int64_t nbytes;
  c10::DeviceIndex device;
};

void free_block(void* context) {
  auto* block = static_cast<DeviceBlock*>(context);
  record_free(block->device, block->nbytes);
  delete block;
}

c10::DataPtr device_data_ptr(void* data, DeviceBlock* block) {
  return c10::DataPtr(data, block, &free_block, c10::Device(kHPU, block->device));
}

// ---------------------------------------------------------------------------------------------- allocator
struct CountingAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = current_device();
    record_alloc(device, static_cast<int64_t>(nbytes));
    c10::DataPtr host = c10::GetDefaultCPUAllocator()->allocate(nbytes);
    void* data = host.get();
    return device_data_ptr(data, new DeviceBlock{std::move(host), {}, static_cast<int64_t>(nbytes), device});
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count > 0) {
      std::memcpy(dest, src, count);
    }
  }
};
CountingAllocator g_allocator;

// Pinned host memory (`tensor.pin_memory(device="hpu")`): host bytes, remembered so that `is_pinned()` can tell them.
std::mutex g_pinned_mutex;
std::unordered_set<const void*> g_pinned;

void free_pinned(void* context) {
  auto* host = static_cast<c10::DataPtr*>(context);
  {
    const std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned.erase(host->get());
  }
  delete host;
}

struct PinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    auto* host = new c10::DataPtr(c10::GetDefaultCPUAllocator()->allocate(nbytes));
    void* data = host->get();
    {
      const std::lock_guard<std::mutex> lock(g_pinned_mutex);
      g_pinned.insert(data);
    }
    return c10::DataPtr(data, host, &free_pinned, c10::Device(c10::DeviceType::CPU));
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count > 0) {
      std::memcpy(dest, src, count);
    }
  }
};
PinnedAllocator g_pinned_allocator;

bool is_pinned(const void* data) {
  const std::lock_guard<std::mutex> lock(g_pinned_mutex);
  return data != nullptr && g_pinned.count(data) > 0;
}

// ---------------------------------------------------------------------------------------------- guard
// Streams and events are those of hpu_streams.cpp: everything runs synchronously on the host, so work on every
// stream is done and a recorded event is complete, but streams and events are checked as the device's.
struct DeviceGuard final : public c10::impl::DeviceGuardImplInterface {
  DeviceGuard() = default;
  explicit DeviceGuard(c10::DeviceType type) {
    TORCH_CHECK(type == kHPU, "The stand-in's device guard serves hpu, not ", type);
  }
  c10::DeviceType type() const override { return kHPU; }
  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous(kHPU, current_device());
    setDevice(device);
    return previous;
  }
  c10::Device getDevice() const override { return c10::Device(kHPU, current_device()); }
  void setDevice(c10::Device device) const override {
    check_device(device);
    if (device.index() >= 0) {
      t_device = device.index();
    }
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0 && device.index() < g_device_count) {
      t_device = device.index();
    }
  }
  c10::Stream getStream(c10::Device device) const override {
    return current_stream(device.has_index() ? device.index() : current_device());
  }
  c10::Stream getDefaultStream(c10::Device device) const override { return default_stream(device); }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override { return new_stream(device); }
  c10::Stream getNewStream(c10::Device device, int) const override { return new_stream(device); }
  c10::Stream exchangeStream(c10::Stream stream) const override { return exchange_stream(stream); }
  c10::DeviceIndex deviceCount() const noexcept override { return g_device_count; }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    record_event(event, stream, device_index, flag);
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event != nullptr) {
      check_stream(stream);  // the recorded work is done: nothing to wait for
    }
  }
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override { destroy_event(event); }
  bool queryStream(const c10::Stream& stream) const override {
    check_stream(stream);
    return true;
  }
  void synchronizeStream(const c10::Stream& stream) const override { check_stream(stream); }
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex device) const override {
    if (device >= 0) {
      check_device(c10::Device(kHPU, device));
    }
  }
  // Memory is freed synchronously (no caching allocator), so no block needs to wait for a stream.
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    return elapsed_milliseconds(start, end);
  }
};

// ---------------------------------------------------------------------------------------------- hooks
// Registered as "HPUHooks": torch then knows HPU as the accelerator (the autograd engine stashes its streams),
// and random ops on hpu use the host's default generator, so torch.manual_seed makes them reproducible.
struct Hooks final : public at::HPUHooksInterface {
  explicit Hooks(at::HPUHooksArgs) {}
  void init() const override {}
  // torch accepts one compiled-in accelerator: in a CUDA build of torch (which runs on the CPU without a GPU)
  // that is CUDA, and HPU is then found at run time through hasHPU().
  bool isBuilt() const override { return !at::detail::getCUDAHooks().isBuilt(); }
  bool isAvailable() const override { return true; }
  bool hasHPU() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return g_device_count; }
  void setCurrentDevice(c10::DeviceIndex device) const override { check_device(c10::Device(kHPU, device)); t_device = device; }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex previous = current_device();
    setCurrentDevice(device);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }
  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  c10::Device getDeviceFromPtr(void*) const override { return c10::Device(kHPU, current_device()); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
};

// ---------------------------------------------------------------------------------------------- control ops
int64_t op_device_count() { return g_device_count; }
int64_t op_current_device() { return current_device(); }
void op_set_device(int64_t device) {
  check_device(c10::Device(kHPU, static_cast<c10::DeviceIndex>(device)));
  t_device = static_cast<c10::DeviceIndex>(device);
}
void op_set_process_device(int64_t device) {
  op_set_device(device);
  g_process_device = static_cast<c10::DeviceIndex>(device);
}
std::vector<int64_t> op_memory_stats(int64_t device) {
  check_device(c10::Device(kHPU, static_cast<c10::DeviceIndex>(device)));
  const DeviceMemory& memory = g_memory[device];
  const int64_t allocs = memory.allocs.load();
  const int64_t frees = memory.frees.load();
  return {memory.in_use.load(), memory.peak.load(), allocs, frees, allocs - frees, memory.max_alloc.load()};
}
void op_reset_peak_memory_stats(int64_t device) {
  check_device(c10::Device(kHPU, static_cast<c10::DeviceIndex>(device)));
  g_memory[device].peak = g_memory[device].in_use.load();
  g_memory[device].max_alloc = 0;
}
void op_set_memory_limit(int64_t nbytes) { g_limit = nbytes; }
void op_set_device_count(int64_t count) {
  TORCH_CHECK(count >= 1 && count <= kMaxDevices, "The CPU stand-in emulates 1 to ", kMaxDevices, " HPUs, not ", count);
  g_device_count = static_cast<c10::DeviceIndex>(count);
  if (g_process_device.load() >= count) {
    g_process_device = 0;
  }
  if (t_device >= count) {
    t_device = -1;
  }
}

}  // namespace

c10::DeviceIndex device_count() { return g_device_count; }

c10::DeviceIndex current_device() { return t_device >= 0 ? t_device : g_process_device.load(); }

void check_device(c10::Device device) {
  TORCH_CHECK(device.type() == kHPU, "Expected an hpu device, got ", device);
  TORCH_CHECK(device.index() < g_device_count, "Invalid device ", device, ": the CPU stand-in emulates ",
              static_cast<int>(g_device_count.load()),
              " HPU(s); set LIGHTNING_HPU_CPU_DEVICES to emulate more (hpu:0 to hpu:N-1).");
}

c10::Allocator* device_allocator() { return &g_allocator; }

c10::DataPtr adopt_host_storage(c10::Storage keep_alive, size_t nbytes, c10::DeviceIndex device) {
  record_alloc(device, static_cast<int64_t>(nbytes));
  void* data = const_cast<void*>(keep_alive.data_ptr().get());
  return device_data_ptr(data, new DeviceBlock{c10::DataPtr(), std::move(keep_alive), static_cast<int64_t>(nbytes), device});
}

c10::DataPtr adopt_host_data(c10::DataPtr host, size_t nbytes, c10::DeviceIndex device) {
  record_alloc(device, static_cast<int64_t>(nbytes));
  void* data = host.get();
  return device_data_ptr(data, new DeviceBlock{std::move(host), {}, static_cast<int64_t>(nbytes), device});
}

}  // namespace lightning_hpu_standin

C10_REGISTER_GUARD_IMPL(HPU, lightning_hpu_standin::DeviceGuard);
REGISTER_ALLOCATOR(c10::DeviceType::HPU, lightning_hpu_standin::device_allocator());

namespace at {
C10_REGISTER_TYPED_CLASS(HPUHooksRegistry, "HPUHooks", lightning_hpu_standin::Hooks)
}  // namespace at

TORCH_LIBRARY(lightning_hpu_standin, m) {
  using namespace lightning_hpu_standin;
  m.def("device_count() -> int", &op_device_count);
  m.def("current_device() -> int", &op_current_device);
  m.def("set_device(int device) -> ()", &op_set_device);
  m.def("set_process_device(int device) -> ()", &op_set_process_device);
  m.def("memory_stats(int device) -> int[]", &op_memory_stats);
  m.def("reset_peak_memory_stats(int device) -> ()", &op_reset_peak_memory_stats);
  m.def("set_memory_limit(int nbytes) -> ()", &op_set_memory_limit);
  m.def("set_device_count(int count) -> ()", &op_set_device_count);
  // A host tensor over the bytes of an hpu tensor, for host libraries (gloo) that take CPU tensors only.
  m.def("host_view(Tensor(a) self) -> Tensor(a)", &host_view);
}
