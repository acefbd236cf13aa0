"""Model facts: what the sizing needs to know about an architecture.

``resolve.resolve_model(model_id=..., revision=..., path=...)`` follows the order local folder → bundled registry → Hub and
returns a :class:`~gpusizer.model.facts.ModelFacts`. Parameters are counted by component in one
module per family under ``families/`` (see ``families/README.md`` to add one).
"""
