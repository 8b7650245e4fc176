"""The Trn1 simulator collector: the execution model (`trnprof.model`) run into canonical runs.

from trnprof.collectors.trn1 import load_config, simulate, summary
config = load_config(preset="llama2-7b", overrides=["cluster.nodes=32"])
summary(config)                      # predictions only, no trace
simulate(config, "runs/llama")       # a full run (events, counters, ranks, manifest)
"""

from trnprof.model.config import Config, list_presets, load_config

from .simulate import demo_config, simulate, summary

__all__ = ["Config", "demo_config", "list_presets", "load_config", "simulate", "summary"]
