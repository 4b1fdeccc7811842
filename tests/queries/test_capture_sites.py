"""queries/capture_sites.scm: what the aux-hidden-state contract follows in a model."""

from __future__ import annotations

SOURCE = """\
class Wrapper(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Inner(config)
        self.capture_aux_hidden_states = False
        total = config.size

    def set_eagle3_layers_to_capture(self, layer_ids):
        self.model.layers_to_capture = [i + 1 for i in layer_ids]
        for layer_id in layer_ids:
            setattr(self.model.layers[layer_id], "_is_layer_to_capture", True)

    def forward(self, input_ids, batch):
        hidden_states = run_language_model(language_model=self.model, ids=input_ids)
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        layer = self.layers[0]
        aux_hidden_states.append(layer(hidden_states))
        print(len(input_ids))
        return self.logits_processor(input_ids, hidden_states, aux_hidden_states)

    def run(self, x, **kwargs):
        out = super().forward(x, **kwargs)
        self.model.forward(x)
        return kwargs.get("captured_last_layer_outputs", out)
"""

# A call that both call patterns match (`self.logits_processor(..., aux_hidden_states)`)
# is captured twice; tracker.extract.parse keeps it once. `print(len(...))` and the local
# `total = ...` are not captured: only what moves capture state or inner models is;
# `super().forward(x, **kwargs)` (a forward handing its keywords on) is matched twice too.
EXPECTED = [
    ("call.arguments", '("captured_last_layer_outputs", out)', 25),
    ("call.arguments", "()", 3),
    ("call.arguments", "(input_ids, hidden_states, aux_hidden_states)", 20),
    ("call.arguments", "(input_ids, hidden_states, aux_hidden_states)", 20),
    ("call.arguments", "(language_model=self.model, ids=input_ids)", 14),
    ("call.arguments", "(layer(hidden_states))", 18),
    ("call.arguments", '(self.model.layers[layer_id], "_is_layer_to_capture", True)', 11),
    ("call.arguments", '(self.model.layers[layer_id], "_is_layer_to_capture", True)', 11),
    ("call.arguments", "(x)", 24),
    ("call.arguments", "(x, **kwargs)", 23),
    ("call.arguments", "(x, **kwargs)", 23),
    ("call.function", "aux_hidden_states.append", 18),
    ("call.function", "kwargs.get", 25),
    ("call.function", "run_language_model", 14),
    ("call.function", "self.logits_processor", 20),
    ("call.function", "self.logits_processor", 20),
    ("call.function", "self.model.forward", 24),
    ("call.function", "setattr", 11),
    ("call.function", "setattr", 11),
    ("call.function", "super().__init__", 3),
    ("call.function", "super().forward", 23),
    ("call.function", "super().forward", 23),
    ("call.site", "aux_hidden_states.append(layer(hidden_states))", 18),
    ("call.site", 'kwargs.get("captured_last_layer_outputs", out)', 25),
    ("call.site", "run_language_model(language_model=self.model, ids=input_ids)", 14),
    ("call.site", "self.logits_processor(input_ids, hidden_states, aux_hidden_states)", 20),
    ("call.site", "self.logits_processor(input_ids, hidden_states, aux_hidden_states)", 20),
    ("call.site", "self.model.forward(x)", 24),
    ("call.site", 'setattr(self.model.layers[layer_id], "_is_layer_to_capture", True)', 11),
    ("call.site", 'setattr(self.model.layers[layer_id], "_is_layer_to_capture", True)', 11),
    ("call.site", "super().__init__()", 3),
    ("call.site", "super().forward(x, **kwargs)", 23),
    ("call.site", "super().forward(x, **kwargs)", 23),
    ("local.name", "layer", 17),
    ("local.site", "layer = self.layers[0]", 17),
    ("local.value", "self.layers[0]", 17),
    ("loop.iter", "layer_ids", 10),
    (
        "loop.site",
        "for layer_id in layer_ids:…"
        'setattr(self.model.layers[layer_id], "_is_layer_to_capture", True)',
        10,
    ),
    ("loop.target", "layer_id", 10),
    ("read.member", "capture_aux_hidden_states", 5),
    ("read.member", "capture_aux_hidden_states", 15),
    ("read.member", "layers_to_capture", 9),
    ("read.site", "self.capture_aux_hidden_states", 5),
    ("read.site", "self.capture_aux_hidden_states", 15),
    ("read.site", "self.model.layers_to_capture", 9),
    ("unpack.site", "hidden_states, aux_hidden_states = hidden_states", 16),
    ("unpack.targets", "hidden_states, aux_hidden_states", 16),
    ("unpack.value", "hidden_states", 16),
    ("write.site", "self.capture_aux_hidden_states = False", 5),
    ("write.site", "self.model = Inner(config)", 4),
    ("write.site", "self.model.layers_to_capture = [i + 1 for i in layer_ids]", 9),
    ("write.target", "self.capture_aux_hidden_states", 5),
    ("write.target", "self.model", 4),
    ("write.target", "self.model.layers_to_capture", 9),
    ("write.value", "False", 5),
    ("write.value", "Inner(config)", 4),
    ("write.value", "[i + 1 for i in layer_ids]", 9),
]


def test_capture_sites_find_writes_unpacks_loops_locals_capture_reads_and_calls(
    captures,
) -> None:
    assert captures("capture_sites", SOURCE) == EXPECTED


def test_plain_locals_and_unrelated_calls_are_not_captured(captures) -> None:
    source = """\
    def f(config, xs):
        total = config.size
        other.flag = True
        print(len(xs))
    """
    assert captures("capture_sites", source) == [
        ("write.site", "other.flag = True", 3),
        ("write.target", "other.flag", 3),
        ("write.value", "True", 3),
    ]


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("capture_sites")
