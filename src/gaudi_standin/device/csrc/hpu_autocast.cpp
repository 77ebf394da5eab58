// HPU autocast on the stand-in: `torch.autocast("hpu")` casts the arguments of the ops in the bridge's lists.
//
// As in the bridge, the lists are read once, when the library loads: the files that
// PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST and PT_HPU_AUTOCAST_FP32_OPS_LIST name (one op per line; each file
// replaces its built-in list), else the built-in lists below, which are the defaults the Intel Gaudi documentation
// gives ("Mixed Precision Training with PyTorch Autocast", docs.habana.ai). An op in several lists takes the first
// of lower precision, fp32, promote. As in the bridge, a normalization in the lower-precision list gets its input
// lowered and keeps its weights ("lower first arg"). Casts are never cached, as on the bridge.
#include "hpu_device.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace lightning_hpu_standin {
namespace {

const std::vector<std::string> kLowerPrecisionOps = {
    "addmm", "addbmm", "batch_norm", "baddbmm", "bmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "dot", "dropout", "feature_dropout", "group_norm", "instance_norm",
    "layer_norm", "leaky_relu", "linear", "matmul", "mean", "mm", "mul", "mv", "softmax", "log_softmax",
    "scaled_dot_product_attention"};

const std::vector<std::string> kFp32Ops = {
    "acos", "addcdiv", "asin", "atan2", "bilinear", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "cdist", "cosh", "cosine_embedding_loss", "cosine_similarity", "cross_entropy_loss", "dist", "div", "divide",
    "embedding", "embedding_bag", "erfinv", "exp", "expm1", "hinge_embedding_loss", "huber_loss", "kl_div",
    "l1_loss", "log", "log10", "log1p", "log2", "logsumexp", "margin_ranking_loss", "mse_loss", "multi_margin_loss",
    "multilabel_margin_loss", "nll_loss", "pdist", "poisson_nll_loss", "pow", "reciprocal", "renorm", "rsqrt",
    "sinh", "smooth_l1_loss", "soft_margin_loss", "softplus", "tan", "topk", "triplet_margin_loss", "true_divide"};

// Of the lower-precision ops, the bridge casts only the input of the normalizations, not their weights.
const std::unordered_set<std::string> kLowerFirstArgOps = {"batch_norm", "group_norm", "instance_norm", "layer_norm"};

// The documentation does not list its promote ops; these are torch's own autocast promote ops.
const std::vector<std::string> kPromoteOps = {"addcmul", "cat", "cross", "grid_sampler", "index_put",
                                              "scatter_add", "stack", "tensordot"};

enum class Policy { LowerPrecision, LowerFirstArg, Fp32, Promote };

bool eligible(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == kHPU && tensor.is_floating_point() &&
         tensor.scalar_type() != at::kDouble;
}

template <typename Visit>
void for_each_tensor(const c10::IValue& value, Visit&& visit) {
  if (value.isTensor()) {
    visit(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) {
      visit(tensor);
    }
  }
}

c10::IValue cast(const c10::IValue& value, at::ScalarType dtype) {
  auto convert = [dtype](const at::Tensor& tensor) {
    return eligible(tensor) && tensor.scalar_type() != dtype ? tensor.to(dtype) : tensor;
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
  return value;
}

template <Policy policy>
void autocast_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t count = op.schema().arguments().size();
  const size_t first = stack->size() - count;
  at::ScalarType dtype = at::kFloat;
  if (policy == Policy::LowerPrecision || policy == Policy::LowerFirstArg) {
    dtype = at::autocast::get_autocast_dtype(kHPU);
  } else if (policy == Policy::Promote) {
    dtype = at::autocast::get_autocast_dtype(kHPU);
    for (size_t i = first; i < stack->size(); ++i) {
      for_each_tensor((*stack)[i], [&](const at::Tensor& tensor) {
        if (eligible(tensor)) {
          dtype = at::promote_types(dtype, tensor.scalar_type());
        }
      });
    }
  }
  const size_t last = policy == Policy::LowerFirstArg ? first + 1 : stack->size();
  for (size_t i = first; i < last; ++i) {
    (*stack)[i] = cast((*stack)[i], dtype);
  }
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastHPU);
  op.callBoxed(stack);
}

std::vector<std::string> read_list(const char* variable, const std::vector<std::string>& defaults) {
  const char* path = std::getenv(variable);
  if (path == nullptr || *path == '\0') {
    return defaults;
  }
  std::ifstream file(path);
  if (!file.is_open()) {
    TORCH_WARN("Cannot open ", variable, "=", path, "; HPU autocast keeps its built-in list.");
    return defaults;
  }
  std::vector<std::string> ops;
  for (std::string line; std::getline(file, line);) {
    const auto begin = line.find_first_not_of(" \t\r");
    if (begin != std::string::npos) {
      ops.push_back(line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1));
    }
  }
  return ops;
}

// Functional overloads only: in-place ops and out= variants are not autocast (as in torch's autocast).
bool functional(const c10::OperatorName& name) {
  return name.name.back() != '_' && name.overload_name.find("out") == std::string::npos;
}

template <Policy policy>
void register_list(torch::Library& library, const std::vector<std::string>& ops, std::unordered_set<std::string>& taken,
                   const std::unordered_set<std::string>& excluded = {}) {
  std::unordered_set<std::string> wanted;
  for (const std::string& op : ops) {
    if (excluded.count(op) == 0) {
      wanted.insert(op);
    }
  }
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0 || !functional(name)) {
      continue;
    }
    const std::string bare = name.name.substr(6);
    const std::string overload = name.overload_name.empty() ? bare : bare + "." + name.overload_name;
    if ((wanted.count(bare) == 0 && wanted.count(overload) == 0) || !taken.insert(overload).second) {
      continue;
    }
    library.impl(overload.c_str(), torch::CppFunction::makeFromBoxedFunction<&autocast_kernel<policy>>());
  }
}

std::unique_ptr<torch::Library> g_autocast_ops;

}  // namespace

// Everything not in a list passes autocast untouched.
TORCH_LIBRARY_IMPL(_, AutocastHPU, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

namespace {
int register_autocast_ops() {
  g_autocast_ops = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::AutocastHPU,
                                                    __FILE__, __LINE__);
  std::unordered_set<std::string> taken;
  const std::vector<std::string> lower = read_list("PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST", kLowerPrecisionOps);
  register_list<Policy::LowerPrecision>(*g_autocast_ops, lower, taken, kLowerFirstArgOps);
  register_list<Policy::LowerFirstArg>(*g_autocast_ops, lower, taken);
  register_list<Policy::Fp32>(*g_autocast_ops, read_list("PT_HPU_AUTOCAST_FP32_OPS_LIST", kFp32Ops), taken);
  register_list<Policy::Promote>(*g_autocast_ops, kPromoteOps, taken);
  return static_cast<int>(taken.size());
}
const int g_registered_autocast_ops = register_autocast_ops();
}  // namespace

}  // namespace lightning_hpu_standin
