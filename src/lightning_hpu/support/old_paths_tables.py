"""The tables of old module paths that :mod:`lightning_hpu.support.old_paths` serves: data only, no code.

Each value here is a literal (the layering tests read this file with ``ast.literal_eval``). A *target* names a value:

* ``"module:attribute"`` (``attribute`` may be dotted) is that object, imported when first read;
* ``"module:function()"`` is what calling that function returns, when first read;
* ``True`` or ``False`` is itself.
"""

#: lightning-hpu 0.1.0's modules that moved, and the module that holds their names now. Importing one warns
#: (``DeprecationWarning``) naming the new module.
MOVED_MODULES: dict[str, str] = {
    "lightning_hpu.accelerator": "lightning_hpu.pytorch.accelerator",
    "lightning_hpu.autocast_ops": "lightning_hpu.device.autocast_ops",
    "lightning_hpu.checkpoint_files": "lightning_hpu.checkpoint.files",
    "lightning_hpu.compile.callback": "lightning_hpu.pytorch.callbacks.compile",
    "lightning_hpu.compile.excluded_time": "lightning_hpu.pytorch.callbacks.excluded_time",
    "lightning_hpu.compile.monitor": "lightning_hpu.pytorch.callbacks.recompile_monitor",
    "lightning_hpu.compile.throughput": "lightning_hpu.pytorch.callbacks.throughput",
    "lightning_hpu.device_info": "lightning_hpu.integration.device_info_line",
    "lightning_hpu.device_rules": "lightning_hpu.device.generation_rules",
    "lightning_hpu.devices": "lightning_hpu.device.selection",
    "lightning_hpu.env_report": "lightning_hpu.support.env_report",
    "lightning_hpu.fabric.plugins.lightning_habana_arguments": "lightning_hpu.precision.lightning_habana_arguments",
    "lightning_hpu.fabric.strategies.rank_watchdog": "lightning_hpu.distributed.rank_watchdog_hooks",
    "lightning_hpu.fp8.callback": "lightning_hpu.pytorch.callbacks.fp8_inference",
    "lightning_hpu.fused_optimizers": "lightning_hpu.device.fused_optimizers",
    "lightning_hpu.hpu_graphs.callback": "lightning_hpu.pytorch.callbacks.hpu_graphs",
    "lightning_hpu.lightning_habana_paths": "lightning_hpu.support.old_paths",
    "lightning_hpu.optimum.callback": "lightning_hpu.pytorch.callbacks.gaudi_config",
    "lightning_hpu.optimum.finite_mean": "lightning_hpu.device.finite_mean",
    "lightning_hpu.optimum.fused_adam": "lightning_hpu.device.fused_adam",
    "lightning_hpu.optimum.loss_logger": "lightning_hpu.pytorch.callbacks.loss_logger",
    "lightning_hpu.plugins": "lightning_hpu.pytorch.plugins",
    "lightning_hpu.plugins.async_checkpoint_io": "lightning_hpu.pytorch.plugins.async_checkpoint_io",
    "lightning_hpu.plugins.checkpoint_io": "lightning_hpu.pytorch.plugins.checkpoint_io",
    "lightning_hpu.plugins.deepspeed_precision": "lightning_hpu.pytorch.plugins.deepspeed_precision",
    "lightning_hpu.plugins.fsdp_precision": "lightning_hpu.pytorch.plugins.fsdp_precision",
    "lightning_hpu.plugins.model_parallel_precision": "lightning_hpu.pytorch.plugins.model_parallel_precision",
    "lightning_hpu.plugins.precision": "lightning_hpu.pytorch.plugins.precision",
    "lightning_hpu.profiler.hpu": "lightning_hpu.pytorch.profilers.hpu",
    "lightning_hpu.profiler.steps": "lightning_hpu.pytorch.profilers.steps",
    "lightning_hpu.ray": "lightning_hpu.pytorch.ray",
    "lightning_hpu.ray.strategies": "lightning_hpu.pytorch.ray.strategies",
    "lightning_hpu.ray.twins": "lightning_hpu.integration.ray_objects",
    "lightning_hpu.ray.worker": "lightning_hpu.pytorch.ray.worker",
    "lightning_hpu.registration": "lightning_hpu.integration.registration",
    "lightning_hpu.strategies": "lightning_hpu.pytorch.strategies",
    "lightning_hpu.strategies.base": "lightning_hpu.pytorch.strategies.base",
    "lightning_hpu.strategies.deepspeed": "lightning_hpu.pytorch.strategies.deepspeed",
    "lightning_hpu.strategies.fsdp": "lightning_hpu.pytorch.strategies.fsdp",
    "lightning_hpu.strategies.hccl": "lightning_hpu.pytorch.strategies.hccl",
    "lightning_hpu.strategies.last_batch": "lightning_hpu.pytorch.strategies.last_batch",
    "lightning_hpu.strategies.model_parallel": "lightning_hpu.pytorch.strategies.model_parallel",
    "lightning_hpu.strategies.parallel": "lightning_hpu.pytorch.strategies.parallel",
    "lightning_hpu.strategies.rank_watchdog": "lightning_hpu.distributed.rank_watchdog_hooks",
    "lightning_hpu.strategies.sigterm": "lightning_hpu.pytorch.strategies.sigterm",
    "lightning_hpu.strategies.single": "lightning_hpu.pytorch.strategies.single",
    "lightning_hpu.strategy_arguments": "lightning_hpu.integration.strategy_arguments",
    "lightning_hpu.strategy_names": "lightning_hpu.integration.strategy_names",
    "lightning_hpu.strategy_objects": "lightning_hpu.integration.strategy_objects",
    "lightning_hpu.suggestions": "lightning_hpu.support.suggestions",
    "lightning_hpu.third_party_warnings": "lightning_hpu.integration.quiet_warnings",
    "lightning_hpu.user_errors": "lightning_hpu.support.user_errors",
    "lightning_hpu.versions": "lightning_hpu.support.versions",
}

#: Names that moved out of 0.1.0's packages that are still there, and their targets now (the package's top level,
#: where it exports them). Reading one warns (``DeprecationWarning``) naming the new import.
MOVED_NAMES: dict[str, dict[str, str]] = {
    "lightning_hpu.compile": {
        "HPUCompile": "lightning_hpu:HPUCompile",
        "HPUCompileError": "lightning_hpu.pytorch.callbacks:HPUCompileError",
        "HPURecompileMonitor": "lightning_hpu:HPURecompileMonitor",
        "HPUThroughputMonitor": "lightning_hpu:HPUThroughputMonitor",
    },
    "lightning_hpu.fp8": {"HPUFp8Inference": "lightning_hpu:HPUFp8Inference"},
    "lightning_hpu.hpu_graphs": {"HPUGraphs": "lightning_hpu:HPUGraphs"},
    "lightning_hpu.optimum": {"HPULossLogger": "lightning_hpu:HPULossLogger"},
    "lightning_hpu.profiler": {"HPUProfiler": "lightning_hpu:HPUProfiler"},
}

#: Every module of lightning-habana 1.7 (``lightning_habana.`` replaced by ``lightning_hpu.``) that is not a module
#: of this package, and the names it exported with their targets (those of
#: docs/guide/coming-from-lightning-habana.md's table). Importing one does not warn: renaming the package is the
#: whole migration. The ``lightning_hpu.utils.imports`` flags are their values under lightning-hpu, which needs
#: Lightning 2.6+, torch 2.9+ and Intel Gaudi 1.23+ (lightning-habana's own language-model example imports
#: ``_LIGHTNING_GREATER_EQUAL_2_3_0``).
HABANA_MODULES: dict[str, dict[str, str | bool]] = {
    "lightning_hpu.pytorch": {
        "HPUAccelerator": "lightning_hpu:HPUAccelerator",
        "HPUDDPStrategy": "lightning_hpu:HPUDDPStrategy",
        "HPUParallelStrategy": "lightning_hpu:HPUParallelStrategy",
        "SingleHPUStrategy": "lightning_hpu:SingleHPUStrategy",
        "HPUDeepSpeedStrategy": "lightning_hpu:HPUDeepSpeedStrategy",
        "HPUFSDPStrategy": "lightning_hpu:HPUFSDPStrategy",
        "HPUPrecisionPlugin": "lightning_hpu:HPUPrecisionPlugin",
        "HPUDeepSpeedPrecisionPlugin": "lightning_hpu:HPUDeepSpeedPrecisionPlugin",
        "HPUFSDPPrecision": "lightning_hpu:HPUFSDPPrecision",
        "HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO",
        "HPUProfiler": "lightning_hpu:HPUProfiler",
    },
    "lightning_hpu.pytorch.accelerator": {"HPUAccelerator": "lightning_hpu:HPUAccelerator"},
    "lightning_hpu.pytorch.strategies": {
        "HPUDDPStrategy": "lightning_hpu:HPUDDPStrategy",
        "HPUParallelStrategy": "lightning_hpu:HPUParallelStrategy",
        "SingleHPUStrategy": "lightning_hpu:SingleHPUStrategy",
        "HPUDeepSpeedStrategy": "lightning_hpu:HPUDeepSpeedStrategy",
        "HPUFSDPStrategy": "lightning_hpu:HPUFSDPStrategy",
    },
    "lightning_hpu.pytorch.strategies.ddp": {"HPUDDPStrategy": "lightning_hpu:HPUDDPStrategy"},
    "lightning_hpu.pytorch.strategies.parallel": {"HPUParallelStrategy": "lightning_hpu:HPUParallelStrategy"},
    "lightning_hpu.pytorch.strategies.single": {"SingleHPUStrategy": "lightning_hpu:SingleHPUStrategy"},
    "lightning_hpu.pytorch.strategies.deepspeed": {"HPUDeepSpeedStrategy": "lightning_hpu:HPUDeepSpeedStrategy"},
    "lightning_hpu.pytorch.strategies.fsdp": {"HPUFSDPStrategy": "lightning_hpu:HPUFSDPStrategy"},
    "lightning_hpu.pytorch.plugins": {
        "HPUPrecisionPlugin": "lightning_hpu:HPUPrecisionPlugin",
        "HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO",
        "HPUDeepSpeedPrecisionPlugin": "lightning_hpu:HPUDeepSpeedPrecisionPlugin",
        "HPUFSDPPrecision": "lightning_hpu:HPUFSDPPrecision",
    },
    "lightning_hpu.pytorch.plugins.precision": {"HPUPrecisionPlugin": "lightning_hpu:HPUPrecisionPlugin"},
    "lightning_hpu.pytorch.plugins.deepspeed_precision": {
        "HPUDeepSpeedPrecisionPlugin": "lightning_hpu:HPUDeepSpeedPrecisionPlugin",
    },
    "lightning_hpu.pytorch.plugins.fsdp_precision": {
        "HPUFSDPPrecision": "lightning_hpu:HPUFSDPPrecision",
        "HPUPrecisionPlugin": "lightning_hpu:HPUPrecisionPlugin",
    },
    "lightning_hpu.pytorch.plugins.io_plugin": {"HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO"},
    "lightning_hpu.pytorch.plugins.quant_config": {},
    "lightning_hpu.pytorch.profiler": {"HPUProfiler": "lightning_hpu:HPUProfiler"},
    "lightning_hpu.pytorch.profiler.profiler": {"HPUProfiler": "lightning_hpu:HPUProfiler"},
    "lightning_hpu.pytorch.datamodule": {},
    "lightning_hpu.pytorch.datamodule.datamodule": {},
    "lightning_hpu.pytorch.datamodule.utils": {},
    "lightning_hpu.pytorch.datamodule.dataloaders": {},
    "lightning_hpu.pytorch.datamodule.dataloaders.resnet_media_pipe": {},
    "lightning_hpu.fabric.strategies.ddp": {"HPUDDPStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy"},
    "lightning_hpu.fabric.plugins.io_plugin": {"HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO"},
    "lightning_hpu.utils": {},
    "lightning_hpu.utils.resources": {
        "device_count": "lightning_hpu:HPUAccelerator.auto_device_count",
        "get_device_name_from_hlsmi": "lightning_hpu:HPUAccelerator.get_device_name",
        "get_device_name_from_backend": "lightning_hpu:HPUAccelerator.get_device_name",
        "get_device_stats": "lightning_hpu.support.lightning_habana_values:get_device_stats",
        "is_fp8_available": "lightning_hpu.support.lightning_habana_values:is_fp8_available",
        "is_fp16_available": "lightning_hpu.support.lightning_habana_values:is_fp16_available",
    },
    "lightning_hpu.utils.imports": {
        "_HABANA_FRAMEWORK_AVAILABLE": "lightning_hpu.support.lightning_habana_values:habana_framework_available()",
        "_HPU_SYNAPSE_GREATER_EQUAL_1_17_0": True,
        "_TORCH_LESSER_EQUAL_1_13_1": False,
        "_TORCH_GREATER_EQUAL_2_0_0": True,
        "_TORCH_LESSER_2_3_0": False,
        "_LIGHTNING_GREATER_EQUAL_2_0_0": True,
        "_LIGHTNING_GREATER_EQUAL_2_3_0": True,
        "_TORCHVISION_AVAILABLE": "lightning_hpu.support.lightning_habana_values:torchvision_available()",
        "_KINETO_AVAILABLE": "lightning_hpu.support.lightning_habana_values:kineto_available()",
    },
    "lightning_hpu.utils.hpu_distributed": {
        "supported_reduce_ops": "lightning_hpu.distributed.collectives:HCCL_OPS_BY_NAME",
    },
}

#: lightning-habana's names of the ``lightning_habana.fabric`` package (this package's ``lightning_hpu.fabric``).
HABANA_FABRIC_PACKAGE: dict[str, str] = {
    "HPUAccelerator": "lightning_hpu:HPUAccelerator",
    "HPUDDPStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy",
    "HPUParallelStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy",
    "SingleHPUStrategy": "lightning_hpu.fabric.strategies:SingleHPUStrategy",
    "HPUFSDPStrategy": "lightning_hpu.fabric.strategies:HPUFSDPStrategy",
    "HPUPrecision": "lightning_hpu:HPUPrecision",
    "HPUFSDPPrecision": "lightning_hpu.fabric.plugins.fsdp_precision:HPUFSDPPrecision",
    "HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO",
}

#: lightning-habana's data packages, served by the package of this one holding the same files.
HABANA_DATA_PACKAGES: dict[str, str] = {"lightning_hpu.pytorch.plugins.quant_config.fp8": "lightning_hpu.fp8.configs"}

#: Names lightning-habana exported that are not carried over, and what to do instead (that page's table).
HABANA_NOT_CARRIED_OVER: dict[str, str] = {
    "HPUDataModule": "it fed Habana's media pipe for one model family; use a torch DataLoader",
    "get_hpu_synapse_version": "`hl-smi -v` prints the Synapse version",
    "modify_fp8_json": "pass config= or dump_stats_path= to HPUFp8Inference, or a config to fp8_measure",
}
