"""The foundation every other package builds on; it imports nothing above it.

``errors`` (HybridAIError and its subclasses, argument checks), ``contracts`` (the three backend
contracts), ``capabilities`` (their typed capabilities), ``execution`` (per-call quantum execution
config, results and statistics), ``registry`` (families by entry point), ``devices`` (torch devices
from target strings), ``module`` (HybridModule, ``place``, ``summary``), ``foreign`` (how the packages above
teach ``place``/``summary`` other frameworks' layers and backend objects), ``precision`` (dtypes under
autocast), ``text_table``.
"""
