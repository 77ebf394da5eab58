"""HPU graphs on the stand-in: capture and replay for real, and the bridge's graph caches over them.

- ``standin_graph``: one captured graph (:class:`~.standin_graph.StandInGraph`) and the rules of a capture;
- ``graphed_callables``, ``module_caches`` (keyed by ``keys``): ``make_graphed_callables``, ``ModuleCacher`` and
  ``wrap_in_hpu_graph`` with the bridge's cache policy;
- ``bridge_api``, ``helpers``: those with the bridge's signatures, which ``habana_frameworks.torch.hpu`` serves.
"""
