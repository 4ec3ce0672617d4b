#!/usr/bin/python3
"""Golden files for weft::nn layers, losses and metrics, computed by NumPy (Debian's python3-numpy).

  make_nn_goldens.py OUT_DIR [GROUP ...]

GROUPs: dense conv pooling core normalization losses metrics more_losses more_metrics more_layers
recurrent attention layers_3d (default: all). Each case writes <case>.<array>.npy into
OUT_DIR/<group>. A layer case holds its input `x`, its weights `w0`, `w1`, ... in the layer's
creation order, the upstream gradient `dy`, and what NumPy computes for the layer: the output `y`
and (most groups) the gradients of sum(y * dy) with respect to x (`dx`) and each weight (`dw0`,
...); more_layers has outputs only, its tests check gradients by finite differences; attention's
cases have several inputs (`query`, `value`, `key`, masks) and their gradients (`dquery`, ...), and
the attention `scores`; layers_3d holds Conv3D and the 3-D poolings (NDHWC) with the arrays that
conv and pooling hold for the 2-D ones.
Forward and backward passes are written out by hand (plain loops for convolution and pooling),
independently of weft. Inputs are float64; weights are rounded to float32 values, since weft's
layers keep float32 variables. The files are reproducible: every value comes from a fixed seed.
"""
import itertools
import os
import sys

import numpy as np

rng = np.random.default_rng(20261122)


def randn(*shape):
    return rng.standard_normal(shape)


def f32(a):
    """Values a float32 variable holds exactly."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


# ---- activations: value and derivative given the pre-activation ------------------------------


def act_forward(name, z):
    if name == "":
        return z
    if name == "relu":
        return np.maximum(z, 0)
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-z))
    if name == "softmax":
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    raise ValueError(name)


def act_backward(name, z, dy):
    y = act_forward(name, z)
    if name == "":
        return dy
    if name == "relu":
        return dy * (z > 0)
    if name == "tanh":
        return dy * (1 - y * y)
    if name == "sigmoid":
        return dy * y * (1 - y)
    if name == "softmax":
        return y * (dy - (dy * y).sum(-1, keepdims=True))
    raise ValueError(name)


# ---- layers --------------------------------------------------------------------------------


def dense_case(x_shape, units, activation, use_bias):
    x = randn(*x_shape)
    w = f32(randn(x_shape[-1], units) * 0.5)
    b = f32(randn(units) * 0.5)
    z = x @ w + (b if use_bias else 0)
    y = act_forward(activation, z)
    dy = randn(*y.shape)
    dz = act_backward(activation, z, dy)
    x2, dz2 = x.reshape(-1, x_shape[-1]), dz.reshape(-1, units)
    out = {"x": x, "w0": w, "dy": dy, "y": y, "dx": dz @ w.T, "dw0": x2.T @ dz2}
    if use_bias:
        out.update(w1=b, dw1=dz2.sum(0))
    return out


def spatial(size, k, stride, dilation, padding):
    """Output size and padding before an axis, TensorFlow's rules."""
    eff = (k - 1) * dilation + 1
    if padding == "same":
        out = -(-size // stride)
        total = max((out - 1) * stride + eff - size, 0)
        return out, total // 2
    return (size - eff) // stride + 1, 0


def conv2d_case(x_shape, kernel, filters, strides, padding, dilation, activation, use_bias):
    n, h, wd, c = x_shape
    kh, kw = kernel
    x = randn(*x_shape)
    w = f32(randn(kh, kw, c, filters) / np.sqrt(kh * kw * c))
    b = f32(randn(filters) * 0.5)
    oh, pt = spatial(h, kh, strides[0], dilation[0], padding)
    ow, pl = spatial(wd, kw, strides[1], dilation[1], padding)
    ph = max((oh - 1) * strides[0] + (kh - 1) * dilation[0] + 1, h + pt)
    pw = max((ow - 1) * strides[1] + (kw - 1) * dilation[1] + 1, wd + pl)
    xp = np.zeros((n, ph, pw, c))
    xp[:, pt:pt + h, pl:pl + wd, :] = x

    def at(i, j, a, bb):
        return i * strides[0] + a * dilation[0], j * strides[1] + bb * dilation[1]

    z = np.zeros((n, oh, ow, filters))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for bb in range(kw):
                    r, s = at(i, j, a, bb)
                    z[:, i, j, :] += xp[:, r, s, :] @ w[a, bb]
    if use_bias:
        z += b
    y = act_forward(activation, z)
    dy = randn(*y.shape)
    dz = act_backward(activation, z, dy)
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for bb in range(kw):
                    r, s = at(i, j, a, bb)
                    dxp[:, r, s, :] += dz[:, i, j, :] @ w[a, bb].T
                    dw[a, bb] += xp[:, r, s, :].T @ dz[:, i, j, :]
    out = {"x": x, "w0": w, "dy": dy, "y": y, "dx": dxp[:, pt:pt + h, pl:pl + wd, :], "dw0": dw}
    if use_bias:
        out.update(w1=b, dw1=dz.sum((0, 1, 2)))
    return out


def pool_case(kind, x_shape, pool, strides, padding):
    n, h, wd, c = x_shape
    x = randn(*x_shape)
    oh, pt = spatial(h, pool[0], strides[0], 1, padding)
    ow, pl = spatial(wd, pool[1], strides[1], 1, padding)
    y = np.zeros((n, oh, ow, c))
    dy = randn(*y.shape)
    dx = np.zeros_like(x)
    for i in range(oh):
        r0 = i * strides[0] - pt
        rows = range(max(r0, 0), min(r0 + pool[0], h))
        for j in range(ow):
            s0 = j * strides[1] - pl
            cols = range(max(s0, 0), min(s0 + pool[1], wd))
            win = x[:, rows.start:rows.stop, cols.start:cols.stop, :]
            if kind == "max":
                flat = win.reshape(n, -1, c)
                y[:, i, j, :] = flat.max(1)
                arg = flat.argmax(1)
                for bi in range(n):
                    for ch in range(c):
                        r, s = divmod(arg[bi, ch], len(cols))
                        dx[bi, rows.start + r, cols.start + s, ch] += dy[bi, i, j, ch]
            else:
                count = len(rows) * len(cols)
                y[:, i, j, :] = win.sum((1, 2)) / count
                dx[:, rows.start:rows.stop, cols.start:cols.stop, :] += (
                    dy[:, i, j, :][:, None, None, :] / count)
    return {"x": x, "dy": dy, "y": y, "dx": dx}


def global_avg_pool_case(x_shape):
    x = randn(*x_shape)
    y = x.mean((1, 2))
    dy = randn(*y.shape)
    dx = np.broadcast_to(dy[:, None, None, :] / (x_shape[1] * x_shape[2]), x_shape).copy()
    return {"x": x, "dy": dy, "y": y, "dx": dx}


def reshape_case(x_shape, out_shape):
    x = randn(*x_shape)
    y = x.reshape(out_shape)
    dy = randn(*y.shape)
    return {"x": x, "dy": dy, "y": y, "dx": dy.reshape(x_shape)}


def activation_case(name, x_shape):
    x = randn(*x_shape)
    y = act_forward(name, x)
    dy = randn(*y.shape)
    return {"x": x, "dy": dy, "y": y, "dx": act_backward(name, x, dy)}


def embedding_case(input_dim, output_dim, ids_shape):
    ids = rng.integers(0, input_dim, size=ids_shape).astype(np.int64)
    ids.flat[0] = ids.flat[1]  # a repeated id: its gradient rows add up
    e = f32(randn(input_dim, output_dim))
    y = e[ids]
    dy = randn(*y.shape)
    de = np.zeros_like(e)
    np.add.at(de, ids.reshape(-1), dy.reshape(-1, output_dim))
    return {"x": ids, "w0": e, "dy": dy, "y": y, "dw0": de}


def normalize_backward(xhat, inv_std, dxhat, axes):
    """Gradient of xhat = (x - mean) * inv_std, statistics over `axes`, given d xhat."""
    count = np.prod([xhat.shape[a] for a in axes])
    return inv_std / count * (count * dxhat - dxhat.sum(axes, keepdims=True) -
                              xhat * (dxhat * xhat).sum(axes, keepdims=True))


def along(v, rank, axis):
    shape = [1] * rank
    shape[axis] = v.size
    return v.reshape(shape)


def batch_norm_case(x_shape, axis, training, momentum=0.9, epsilon=1e-3):
    rank = len(x_shape)
    axis %= rank
    axes = tuple(a for a in range(rank) if a != axis)
    features = x_shape[axis]
    x = randn(*x_shape) * 2 + 0.5
    gamma = f32(1 + 0.3 * randn(features))
    beta = f32(0.3 * randn(features))
    moving_mean = f32(0.2 * randn(features))
    moving_var = f32(0.5 + rng.random(features))
    g, bt = along(gamma, rank, axis), along(beta, rank, axis)
    if training:
        mean = x.mean(axes, keepdims=True)
        var = ((x - mean)**2).mean(axes, keepdims=True)
    else:
        mean, var = along(moving_mean, rank, axis), along(moving_var, rank, axis)
    inv_std = 1 / np.sqrt(var + epsilon)
    xhat = (x - mean) * inv_std
    y = xhat * g + bt
    dy = randn(*y.shape)
    dxhat = dy * g
    dx = normalize_backward(xhat, inv_std, dxhat, axes) if training else dxhat * inv_std
    out = {"x": x, "w0": gamma, "w1": beta, "w2": moving_mean, "w3": moving_var, "dy": dy,
           "y": y, "dx": dx, "dw0": (dy * xhat).sum(axes), "dw1": dy.sum(axes)}
    if training:
        out["moving_mean_after"] = moving_mean * momentum + mean.reshape(-1) * (1 - momentum)
        out["moving_variance_after"] = moving_var * momentum + var.reshape(-1) * (1 - momentum)
    return out


def layer_norm_case(x_shape, axis, epsilon=1e-3):
    rank = len(x_shape)
    axis %= rank
    features = x_shape[axis]
    x = randn(*x_shape) * 1.5 - 0.3
    gamma = f32(1 + 0.3 * randn(features))
    beta = f32(0.3 * randn(features))
    g, bt = along(gamma, rank, axis), along(beta, rank, axis)
    mean = x.mean(axis, keepdims=True)
    var = ((x - mean)**2).mean(axis, keepdims=True)
    inv_std = 1 / np.sqrt(var + epsilon)
    xhat = (x - mean) * inv_std
    y = xhat * g + bt
    dy = randn(*y.shape)
    others = tuple(a for a in range(rank) if a != axis)
    return {"x": x, "w0": gamma, "w1": beta, "dy": dy, "y": y,
            "dx": normalize_backward(xhat, inv_std, dy * g, (axis,)),
            "dw0": (dy * xhat).sum(others), "dw1": dy.sum(others)}


# ---- losses: the batch mean of per-example losses and its gradient w.r.t. y_pred -----------

EPS = 1e-7  # Keras's backend epsilon


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def loss_cases():
    b, k = 6, 4
    labels = rng.integers(0, k, size=b).astype(np.int64)
    onehot = np.eye(k)[labels]
    logits = randn(b, k) * 2
    probs = softmax(randn(b, k))
    soft = softmax(randn(b, k))  # soft labels for categorical crossentropy
    unnormalized = 0.1 + rng.random((b, k))  # CCE normalises probabilities itself
    s = unnormalized.sum(-1, keepdims=True)
    bin_labels = np.concatenate([rng.integers(0, 2, size=(b, 2)), rng.random((b, 1))], 1)
    bin_logits = randn(b, 3) * 2
    bin_probs = 0.05 + 0.9 * rng.random((b, 3))
    reg_true, reg_pred = randn(b, 3), randn(b, 3)
    err = reg_pred - reg_true
    n = b * 3
    sig = 1 / (1 + np.exp(-bin_logits))
    lse = np.log(np.exp(logits).sum(-1))
    huber_delta = 0.8
    quadratic = np.abs(err) <= huber_delta
    cases = {
        "scce_logits": (labels, logits, (lse - logits[np.arange(b), labels]).mean(),
                        (softmax(logits) - onehot) / b),
        "scce_probs": (labels, probs, -np.log(probs[np.arange(b), labels]).mean(),
                       -onehot / np.where(onehot > 0, probs, 1) / b),
        "cce_logits": (soft, logits, -(soft * (logits - lse[:, None])).sum(-1).mean(),
                       (softmax(logits) * soft.sum(-1, keepdims=True) - soft) / b),
        "cce_probs": (soft, unnormalized, -(soft * np.log(unnormalized / s)).sum(-1).mean(),
                      (-soft / unnormalized + soft.sum(-1, keepdims=True) / s) / b),
        "bce_logits": (bin_labels, bin_logits,
                       (np.maximum(bin_logits, 0) - bin_logits * bin_labels +
                        np.log1p(np.exp(-np.abs(bin_logits)))).mean(), (sig - bin_labels) / n),
        # TF 2.4's K.binary_crossentropy adds epsilon inside both logs.
        "bce_probs": (bin_labels, bin_probs,
                      -(bin_labels * np.log(bin_probs + EPS) +
                        (1 - bin_labels) * np.log(1 - bin_probs + EPS)).mean(),
                      (-bin_labels / (bin_probs + EPS) +
                       (1 - bin_labels) / (1 - bin_probs + EPS)) / n),
        "mse": (reg_true, reg_pred, (err**2).mean(), 2 * err / n),
        "mae": (reg_true, reg_pred, np.abs(err).mean(), np.sign(err) / n),
        "huber": (reg_true, reg_pred,
                  np.where(quadratic, 0.5 * err**2,
                           huber_delta * np.abs(err) - 0.5 * huber_delta**2).mean(),
                  np.where(quadratic, err, huber_delta * np.sign(err)) / n),
    }
    out = {}
    for name, (y_true, y_pred, loss, grad) in cases.items():
        out[name] = {"y_true": y_true, "y_pred": y_pred, "loss": np.float64(loss), "grad": grad}
    return out


# ---- metrics: batches of (y_true, y_pred) and the running result after all of them --------


def metric_cases():
    out = {}
    # Sparse labels: one batch of shape (b,), one of shape (b, 1).
    p1, p2 = randn(7, 5), randn(4, 5)
    l1, l2 = rng.integers(0, 5, size=7), rng.integers(0, 5, size=(4, 1))
    p2[0] = [0.3, 0.3, 0.3, 0.1, 0.3]  # ties with the label's score count as in the top k
    l2[0, 0] = 2
    labels = np.concatenate([l1, l2[:, 0]])
    preds = np.concatenate([p1, p2])
    sparse = (preds.argmax(-1) == labels).mean()

    def top_k(k):
        better = (preds > preds[np.arange(len(labels)), labels][:, None]).sum(-1)
        return (better < k).mean()

    out["sparse"] = {"y_true0": l1.astype(np.int64), "y_pred0": p1,
                     "y_true1": l2.astype(np.int64), "y_pred1": p2,
                     "sparse_categorical_accuracy": sparse, "top2": top_k(2), "top5": top_k(5)}
    # One-hot labels.
    c1, c2 = randn(6, 3), randn(5, 3)
    o1, o2 = np.eye(3)[rng.integers(0, 3, size=6)], np.eye(3)[rng.integers(0, 3, size=5)]
    cat = np.concatenate([c1.argmax(-1) == o1.argmax(-1), c2.argmax(-1) == o2.argmax(-1)]).mean()
    out["categorical"] = {"y_true0": o1, "y_pred0": c1, "y_true1": o2, "y_pred1": c2,
                          "categorical_accuracy": cat}
    # Binary labels against probabilities, (b, 1).
    b1, b2 = rng.random((8, 1)), rng.random((3, 1))
    t1, t2 = rng.integers(0, 2, size=(8, 1)), rng.integers(0, 2, size=(3, 1))
    binary = np.concatenate([(b1 > 0.5) == t1, (b2 > 0.5) == t2]).mean()
    out["binary"] = {"y_true0": t1.astype(np.float64), "y_pred0": b1,
                     "y_true1": t2.astype(np.float64), "y_pred1": b2, "binary_accuracy": binary}
    # Exact equality (keras.metrics.Accuracy) and the running mean.
    e1, e2 = rng.integers(0, 3, size=(5, 2)), rng.integers(0, 3, size=(2, 2))
    f1, f2 = rng.integers(0, 3, size=(5, 2)), rng.integers(0, 3, size=(2, 2))
    out["exact"] = {"y_true0": e1.astype(np.int64), "y_pred0": f1.astype(np.int64),
                    "y_true1": e2.astype(np.int64), "y_pred1": f2.astype(np.int64),
                    "accuracy": np.concatenate([e1 == f1, e2 == f2]).mean()}
    v1, v2 = randn(5), randn(3, 2)
    out["mean"] = {"values0": v1, "values1": v2,
                   "mean": np.concatenate([v1, v2.reshape(-1)]).mean()}
    return out


# ---- more losses: per-example values, the batch mean, and the sample-weighted mean ----------


def log_softmax(z):
    return z - z.max(-1, keepdims=True) - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True))


def unit(v):
    return v / np.sqrt(np.maximum((v * v).sum(-1, keepdims=True), 1e-12))


def more_loss_cases():
    b, k = 5, 4
    y_reg, p_reg = randn(b, k), randn(b, k)
    pos_t, pos_p = 3 * rng.random((b, k)), 0.1 + 3 * rng.random((b, k))
    dist_t, dist_p = softmax(randn(b, k)), softmax(randn(b, k))
    dist_t[0, 0] = 0.0  # clipped to 1e-7, as Keras
    pm1 = rng.choice([-1.0, 1.0], size=(b, k))
    zero_one = rng.integers(0, 2, size=(b, k)).astype(np.float64)
    onehot = np.eye(k)[rng.integers(0, k, size=b)]
    logits = 2 * randn(b, k)
    smooth_cce = onehot * 0.9 + 0.1 / k
    z = zero_one * 0.8 + 0.1  # binary label smoothing 0.2
    sig = 1 / (1 + np.exp(-logits))
    hinge = lambda y: np.maximum(1 - y * p_reg, 0)
    kt, kp = np.clip(dist_t, EPS, 1), np.clip(dist_p, EPS, 1)
    per = {
        "mape": (y_reg, p_reg, 100 * np.abs((y_reg - p_reg) / np.maximum(np.abs(y_reg), EPS)).mean(-1)),
        "msle": (pos_t, pos_p, ((np.log(pos_p + 1) - np.log(pos_t + 1)) ** 2).mean(-1)),
        "logcosh": (y_reg, p_reg, np.log(np.cosh(p_reg - y_reg)).mean(-1)),
        "kld": (dist_t, dist_p, (kt * np.log(kt / kp)).sum(-1)),
        "poisson": (pos_t, pos_p, (pos_p - pos_t * np.log(pos_p + EPS)).mean(-1)),
        "cosine": (y_reg, p_reg, -(unit(y_reg) * unit(p_reg)).sum(-1)),
        "hinge_pm1": (pm1, p_reg, hinge(pm1).mean(-1)),
        "hinge_01": (zero_one, p_reg, hinge(2 * zero_one - 1).mean(-1)),
        "squared_hinge": (zero_one, p_reg, (hinge(2 * zero_one - 1) ** 2).mean(-1)),
        "categorical_hinge": (onehot, p_reg, np.maximum(
            0, ((1 - onehot) * p_reg).max(-1) - (onehot * p_reg).sum(-1) + 1)),
        "cce_smoothed": (onehot, logits, -(smooth_cce * log_softmax(logits)).sum(-1)),
        "bce_smoothed": (zero_one, logits, -(z * np.log(sig) + (1 - z) * np.log(1 - sig)).mean(-1)),
    }
    out = {}
    for name, (y_true, y_pred, values) in per.items():
        w = 0.25 + rng.random(b)
        out[name] = {"y_true": y_true, "y_pred": y_pred, "per_example": values,
                     "loss": np.float64(values.mean()), "w": w,
                     "weighted": np.float64((values * w).sum() / b)}
    # One value per example, for the label-shape rules: labels (N,) or (N, 1) against (N, 1).
    col_t, col_p = randn(6, 1), randn(6, 1)
    out["mse_column"] = {"y_true": col_t, "y_pred": col_p,
                         "loss": np.float64(((col_p - col_t) ** 2).mean())}
    bt, bp = rng.integers(0, 2, size=(6, 1)).astype(np.float64), 0.05 + 0.9 * rng.random((6, 1))
    out["bce_column"] = {"y_true": bt, "y_pred": bp, "loss": np.float64(
        -(bt * np.log(bp + EPS) + (1 - bt) * np.log(1 - bp + EPS)).mean())}
    # A sequence: integer labels (N, T), logits (N, T, C) and per-step weights (N, T).
    seq_labels = rng.integers(0, 5, size=(3, 4))
    seq_logits = randn(3, 4, 5)
    seq_w = rng.random((3, 4))
    seq_l = -np.take_along_axis(log_softmax(seq_logits), seq_labels[..., None], -1)[..., 0]
    out["scce_sequence"] = {"y_true": seq_labels.astype(np.int64), "y_pred": seq_logits,
                            "w": seq_w, "per_example": seq_l,
                            "weighted": np.float64((seq_l * seq_w).sum() / seq_l.size)}
    return out


# ---- more metrics: two weighted batches each, and the results Keras would give ----------------


def confusion_at(labels, preds, weights, thresholds):
    """Weighted (tp, fp, tn, fn) at each threshold: a value is positive above the threshold."""
    above = preds[None, :] > thresholds[:, None]
    pos = labels[None, :] != 0
    w = weights[None, :]
    return ((above & pos) * w).sum(1), ((above & ~pos) * w).sum(1), \
        ((~above & ~pos) * w).sum(1), ((~above & pos) * w).sum(1)


def safe_div(a, b):
    return np.where(b != 0, a / np.where(b != 0, b, 1), 0.0)


def keras_auc(labels, preds, weights, n, curve, method):
    thresholds = np.array([-EPS] + [i / (n - 1) for i in range(1, n - 1)] + [1 + EPS])
    tp, fp, tn, fn = confusion_at(labels, preds, weights, thresholds)
    if curve == "PR" and method == "interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        slope = safe_div(dtp, np.maximum(p[:-1] - p[1:], 0))
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), safe_div(p[:-1], np.maximum(p[1:], 0)), 1.0)
        return safe_div(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0)).sum()
    recall = safe_div(tp, tp + fn)
    x, y = (safe_div(fp, fp + tn), recall) if curve == "ROC" else (recall, safe_div(tp, tp + fp))
    heights = {"interpolation": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
               "majoring": np.maximum(y[:-1], y[1:])}[method]
    return ((x[:-1] - x[1:]) * heights).sum()


def more_metric_cases():
    out = {}
    # Binary labels against probabilities, (b, 1), two batches with per-example weights.
    t1, t2 = rng.integers(0, 2, size=(40, 1)), rng.integers(0, 2, size=(24, 1))
    p1 = np.clip(0.35 * t1 + 0.65 * rng.random((40, 1)), 0, 1)
    p2 = np.clip(0.35 * t2 + 0.65 * rng.random((24, 1)), 0, 1)
    w1, w2 = 0.5 + rng.random(40), 0.5 + rng.random(24)
    labels, preds, weights = np.concatenate([t1, t2])[:, 0], np.concatenate([p1, p2])[:, 0], \
        np.concatenate([w1, w2])
    tp, fp, tn, fn = (v[0] for v in confusion_at(labels, preds, weights, np.array([0.5])))
    case = {"y_true0": t1.astype(np.float64), "y_pred0": p1, "w0": w1,
            "y_true1": t2.astype(np.float64), "y_pred1": p2, "w1": w2,
            "tp": tp, "fp": fp, "tn": tn, "fn": fn, "precision": tp / (tp + fp),
            "recall": tp / (tp + fn)}
    for curve in ("ROC", "PR"):
        for method in ("interpolation", "minoring", "majoring"):
            case[f"auc_{curve}_{method}"] = keras_auc(labels, preds, weights, 200, curve, method)
    # The exact (rank) ROC AUC, which 200 thresholds approximate.
    pos, neg = preds[labels == 1], preds[labels == 0]
    wp, wn = weights[labels == 1], weights[labels == 0]
    case["auc_exact"] = (((pos[:, None] > neg[None, :]) * wp[:, None] * wn[None, :]).sum()
                         / (wp.sum() * wn.sum()))
    out["binary_weighted"] = case
    # Precision and recall of one class of (b, 3) scores.
    c1, c2 = rng.random((9, 3)), rng.random((7, 3))
    o1, o2 = rng.integers(0, 2, size=(9, 3)), rng.integers(0, 2, size=(7, 3))
    col = 1
    tp, fp, tn, fn = (v[0] for v in confusion_at(np.concatenate([o1, o2])[:, col],
                                                  np.concatenate([c1, c2])[:, col],
                                                  np.ones(16), np.array([0.5])))
    out["class_id"] = {"y_true0": o1.astype(np.float64), "y_pred0": c1,
                       "y_true1": o2.astype(np.float64), "y_pred1": c2,
                       "precision": tp / (tp + fp), "recall": tp / (tp + fn)}
    # Regression metrics, weighted per example.
    r1, r2 = randn(6, 3), randn(4, 3)
    q1, q2 = randn(6, 3), randn(4, 3)
    v1, v2 = 0.5 + rng.random(6), 0.5 + rng.random(4)
    y, p, w = np.concatenate([r1, r2]), np.concatenate([q1, q2]), np.concatenate([v1, v2])
    wmean = lambda per: (per * w).sum() / w.sum()
    out["regression"] = {
        "y_true0": r1, "y_pred0": q1, "w0": v1, "y_true1": r2, "y_pred1": q2, "w1": v2,
        "mse": wmean(((p - y) ** 2).mean(-1)), "mae": wmean(np.abs(p - y).mean(-1)),
        "mape": wmean((100 * np.abs((y - p) / np.maximum(np.abs(y), EPS))).mean(-1)),
        "rmse": np.sqrt(wmean(((p - y) ** 2).mean(-1))),
        "logcosh": wmean(np.log(np.cosh(p - y)).mean(-1)),
        "cosine": wmean((unit(y) * unit(p)).sum(-1)),
        "mse_unweighted": ((p - y) ** 2).mean(),
    }
    # Class scores: top-k of one-hot labels, crossentropies, weighted sparse accuracy.
    s1, s2 = softmax(randn(8, 5)), softmax(randn(5, 5))
    l1, l2 = rng.integers(0, 5, size=8), rng.integers(0, 5, size=5)
    u1, u2 = 0.5 + rng.random(8), 0.5 + rng.random(5)
    scores, ids, w = np.concatenate([s1, s2]), np.concatenate([l1, l2]), np.concatenate([u1, u2])
    true_score = scores[np.arange(len(ids)), ids]
    better = (scores > true_score[:, None]).sum(-1)
    out["classes"] = {
        "y_true0": np.eye(5)[l1], "y_pred0": s1, "w0": u1, "ids0": l1.astype(np.int64),
        "y_true1": np.eye(5)[l2], "y_pred1": s2, "w1": u2, "ids1": l2.astype(np.int64),
        "top2": (better < 2).mean(), "top2_weighted": ((better < 2) * w).sum() / w.sum(),
        "cce": (-np.log(true_score)).mean(),
        "sparse_accuracy_weighted": ((scores.argmax(-1) == ids) * w).sum() / w.sum(),
    }
    # Mean IoU of class ids (4 classes; class 3 never occurs, so it is left out of the mean).
    a1, a2 = rng.integers(0, 3, size=(4, 5)), rng.integers(0, 3, size=(3, 5))
    b1, b2 = rng.integers(0, 3, size=(4, 5)), rng.integers(0, 3, size=(3, 5))
    m1, m2 = rng.random(4), rng.random(3)
    cm = np.zeros((4, 4))
    for t, q, ww in ((a1, b1, m1), (a2, b2, m2)):
        np.add.at(cm, (t.reshape(-1), q.reshape(-1)), np.repeat(ww, 5))
    inter = np.diag(cm)
    union = cm.sum(0) + cm.sum(1) - inter
    out["iou"] = {"y_true0": a1.astype(np.int64), "y_pred0": b1.astype(np.int64), "w0": m1,
                  "y_true1": a2.astype(np.int64), "y_pred1": b2.astype(np.int64), "w1": m2,
                  "mean_iou": (inter[union > 0] / union[union > 0]).mean()}
    # Sum and the weighted Mean.
    x1, x2 = randn(5), randn(3)
    g1, g2 = rng.random(5), rng.random(3)
    out["sums"] = {"values0": x1, "w0": g1, "values1": x2, "w1": g2,
                   "sum": (x1 * g1).sum() + (x2 * g2).sum(),
                   "mean": ((x1 * g1).sum() + (x2 * g2).sum()) / (g1.sum() + g2.sum())}
    return out


# ---- more layers: outputs of the everyday layers, by plain loops -----------------------------


def conv_nd_grouped(x, w, strides, pads, dilation, groups):
    """NHWC x, (kh, kw, c / groups, oc) w, explicit (top, left) padding; output size by VALID on
    the padded input."""
    n, h, wd, c = x.shape
    kh, kw, cg, oc = w.shape
    xp = np.pad(x, ((0, 0), (pads[0][0], pads[0][1]), (pads[1][0], pads[1][1]), (0, 0)))
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (xp.shape[1] - eh) // strides[0] + 1
    ow = (xp.shape[2] - ew) // strides[1] + 1
    og = oc // groups
    y = np.zeros((n, oh, ow, oc))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    patch = xp[:, i * strides[0] + a * dilation[0], j * strides[1] + b * dilation[1], :]
                    for g in range(groups):
                        y[:, i, j, g * og:(g + 1) * og] += \
                            patch[:, g * cg:(g + 1) * cg] @ w[a, b, :, g * og:(g + 1) * og]
    return y


def same_pads(size, k, stride, dilation):
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return (total // 2, total - total // 2)


def conv_case(x_shape, w_shape, strides, padding, dilation=(1, 1), groups=1, bias=True):
    x, w = randn(*x_shape), f32(randn(*w_shape) * 0.5)
    pads = [same_pads(x_shape[1 + i], w_shape[i], strides[i], dilation[i]) if padding == "same"
            else (0, 0) for i in range(2)]
    y = conv_nd_grouped(x, w, strides, pads, dilation, groups)
    case = {"x": x, "w0": w}
    if bias:
        b = f32(randn(w_shape[3]))
        case["w1"] = b
        y = y + b
    case["y"] = y
    return case


def conv1d_case(x_shape, w_shape, stride, padding, dilation=1):
    x, w, b = randn(*x_shape), f32(randn(*w_shape) * 0.5), f32(randn(w_shape[2]))
    k = w_shape[0]
    if padding == "causal":
        pads = ((k - 1) * dilation, 0)
    elif padding == "same":
        pads = same_pads(x_shape[1], k, stride, dilation)
    else:
        pads = (0, 0)
    y = conv_nd_grouped(x[:, None], w[None], (1, stride), ((0, 0), pads), (1, dilation), 1)[:, 0]
    return {"x": x, "w0": w, "w1": b, "y": y + b}


def transpose_case(x_shape, w_shape, strides, padding):
    """y[n, i s + a - top, j s + b - left, o] += x[n, i, j, c] w[a, b, o, c]."""
    x, w, b = randn(*x_shape), f32(randn(*w_shape) * 0.5), f32(randn(w_shape[2]))
    n, h, wd, c = x_shape
    kh, kw, oc, _ = w_shape
    if padding == "same":
        out = (h * strides[0], wd * strides[1])
        top = max(kh - strides[0], 0) // 2
        left = max(kw - strides[1], 0) // 2
    else:
        # Keras's deconv_output_length.
        out = (h * strides[0] + max(kh - strides[0], 0), wd * strides[1] + max(kw - strides[1], 0))
        top = left = 0
    y = np.zeros((n, out[0], out[1], oc))
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for bb in range(kw):
                    r, q = i * strides[0] + a - top, j * strides[1] + bb - left
                    if 0 <= r < out[0] and 0 <= q < out[1]:
                        y[:, r, q, :] += x[:, i, j, :] @ w[a, bb].T
    return {"x": x, "w0": w, "w1": b, "y": y + b}


def depthwise_case(x_shape, kernel, multiplier, strides, padding, separable_filters=0):
    x = randn(*x_shape)
    c = x_shape[3]
    dw = f32(randn(kernel[0], kernel[1], c, multiplier) * 0.5)
    pads = [same_pads(x_shape[1 + i], kernel[i], strides[i], 1) if padding == "same" else (0, 0)
            for i in range(2)]
    # Depthwise = grouped with one group per channel; filter (kh, kw, 1, c * m).
    y = conv_nd_grouped(x, dw.reshape(kernel[0], kernel[1], 1, c * multiplier), strides, pads,
                        (1, 1), c)
    case = {"x": x, "w0": dw}
    if separable_filters:
        pw = f32(randn(1, 1, c * multiplier, separable_filters) * 0.5)
        y = y @ pw[0, 0]
        case["w1"] = pw
    b = f32(randn(y.shape[-1]))
    case["w" + str(len(case) - 1)] = b
    case["y"] = y + b
    return case


def pool1d_case(kind, x_shape, pool, stride, padding):
    x = randn(*x_shape)
    n, steps, c = x_shape
    if padding == "same":
        out = -(-steps // stride)
        top = max((out - 1) * stride + pool - steps, 0) // 2
    else:
        out, top = (steps - pool) // stride + 1, 0
    y = np.zeros((n, out, c))
    for t in range(out):
        lo, hi = max(t * stride - top, 0), min(t * stride - top + pool, steps)
        window = x[:, lo:hi]
        y[:, t] = window.max(1) if kind == "max" else window.mean(1)
    return {"x": x, "y": y}


def elementwise_case(fn, shape, weights=()):
    x = randn(*shape)
    case = {"x": x, "y": fn(x)}
    for i, w in enumerate(weights):
        case[f"w{i}"] = w
    return case


def bilinear_matrix(size_in, size_out):
    m = np.zeros((size_out, size_in))
    scale = size_in / size_out
    for o in range(size_out):
        src = (o + 0.5) * scale - 0.5
        lo = max(int(np.floor(src)), 0)
        hi = min(int(np.ceil(src)), size_in - 1)
        frac = src - np.floor(src)
        m[o, lo] += 1 - frac
        m[o, hi] += frac
    return m


def more_layer_cases():
    alpha = f32(0.1 * randn(1, 4))
    prelu_x = randn(2, 3, 4)
    up = randn(2, 3, 2, 2)
    bil = randn(1, 3, 4, 2)
    pad_x = randn(2, 5, 6, 3)
    perm_x = randn(2, 3, 4, 5)
    rep_x = randn(2, 4)
    d1, d2 = randn(2, 4), randn(2, 4)
    s1, s2 = randn(2, 3, 4), randn(2, 5, 4)
    unit = lambda v, a: v / np.sqrt(np.maximum((v * v).sum(a, keepdims=True), 1e-12))  # noqa
    norm_data = 3 + 2 * randn(40, 3)
    norm_x = randn(5, 3)
    relu = lambda x: np.minimum(np.where(x >= 0.2, x, 0.1 * (x - 0.2)), 0.6)  # noqa: E731
    cases = {
        "conv1d_causal": conv1d_case((2, 7, 3), (3, 3, 4), 1, "causal", 2),
        "conv1d_same_strided": conv1d_case((2, 8, 3), (3, 3, 2), 2, "same"),
        "conv2d_grouped": conv_case((2, 5, 5, 4), (3, 3, 2, 6), (1, 1), "same", groups=2),
        "transpose_same": transpose_case((2, 3, 3, 2), (3, 3, 4, 2), (2, 2), "same"),
        "transpose_valid": transpose_case((1, 3, 4, 3), (2, 3, 2, 3), (2, 1), "valid"),
        "depthwise": depthwise_case((2, 5, 6, 3), (3, 3), 2, (1, 1), "valid"),
        "separable": depthwise_case((2, 6, 6, 3), (3, 3), 2, (2, 2), "same", separable_filters=4),
        "maxpool1d": pool1d_case("max", (2, 7, 3), 2, 2, "valid"),
        "avgpool1d_same": pool1d_case("avg", (2, 7, 3), 3, 2, "same"),
        "global_max_1d": elementwise_case(lambda x: x.max(1), (2, 5, 3)),
        "global_avg_1d": elementwise_case(lambda x: x.mean(1), (2, 5, 3)),
        "global_max_2d": elementwise_case(lambda x: x.max((1, 2)), (2, 4, 3, 5)),
        "leaky_relu": elementwise_case(lambda x: np.where(x > 0, x, 0.2 * x), (3, 5)),
        "elu": elementwise_case(lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), (3, 5)),
        "relu_options": elementwise_case(relu, (4, 5)),
        "softmax_axis1": elementwise_case(
            lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True), (2, 3, 4)),
        "prelu": {"x": prelu_x, "w0": alpha, "y": np.where(prelu_x > 0, prelu_x, alpha * prelu_x)},
        "upsampling_nearest": {"x": up, "y": up.repeat(2, 1).repeat(3, 2)},
        "upsampling_bilinear": {"x": bil, "y": np.einsum("oh,nhwc,pw->nopc", bilinear_matrix(3, 6),
                                                         bil, bilinear_matrix(4, 8))},
        "zero_padding": {"x": pad_x, "y": np.pad(pad_x, ((0, 0), (1, 2), (0, 1), (0, 0)))},
        "cropping": {"x": pad_x, "y": pad_x[:, 1:, 1:4]},
        "permute": {"x": perm_x, "y": perm_x.transpose(0, 2, 3, 1)},
        "repeat_vector": {"x": rep_x, "y": np.repeat(rep_x[:, None], 3, 1)},
        "dot_2d": {"x0": d1, "x1": d2, "y": (d1 * d2).sum(1, keepdims=True),
                   "y_normalized": (unit(d1, 1) * unit(d2, 1)).sum(1, keepdims=True)},
        "dot_3d": {"x0": s1, "x1": s2, "y": s1 @ s2.transpose(0, 2, 1)},
        "normalization": {"data": norm_data, "x": norm_x, "mean": norm_data.mean(0),
                          "variance": norm_data.var(0),
                          "y": (norm_x - norm_data.mean(0)) / np.sqrt(norm_data.var(0))},
    }
    for case in cases.values():  # an upstream gradient, for check_layer's loss
        case["dy"] = randn(*case["y"].shape)
    return cases


# ---- recurrent layers: Keras's cells step by step, masks, go_backwards, states -----------------


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def rnn_run(cell, x, weights, units, mask=None, go_backwards=False, zero_output=False,
            initial=None, reset_after=True):
    """Keras's RNN loop: returns (outputs in processing order, last output, final states)."""
    n, steps, _ = x.shape
    kernel, recurrent = weights[0], weights[1]
    bias = weights[2] if len(weights) > 2 else None
    states = [np.zeros((n, units)) for _ in range(2 if cell == "lstm" else 1)]
    if initial is not None:
        states = [s.copy() for s in initial]
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs, prev = [], np.zeros((n, units))
    for t in order:
        xt = x[:, t]
        h = states[0]
        if cell == "simple":
            y = np.tanh(xt @ kernel + h @ recurrent + (bias if bias is not None else 0))
            new = [y]
        elif cell == "lstm":
            z = xt @ kernel + h @ recurrent + (bias if bias is not None else 0)
            i, f, g, o = (z[:, k * units:(k + 1) * units] for k in range(4))
            c = sigmoid(f) * states[1] + sigmoid(i) * np.tanh(g)
            y = sigmoid(o) * np.tanh(c)
            new = [y, c]
        else:
            u = units
            if reset_after:
                xp = xt @ kernel + bias[0]
                hu = h @ recurrent + bias[1]
                zg = sigmoid(xp[:, :u] + hu[:, :u])
                r = sigmoid(xp[:, u:2 * u] + hu[:, u:2 * u])
                cand = np.tanh(xp[:, 2 * u:] + r * hu[:, 2 * u:])
            else:
                xp = xt @ kernel + bias
                zg = sigmoid(xp[:, :u] + h @ recurrent[:, :u])
                r = sigmoid(xp[:, u:2 * u] + h @ recurrent[:, u:2 * u])
                cand = np.tanh(xp[:, 2 * u:] + (r * h) @ recurrent[:, 2 * u:])
            y = zg * h + (1 - zg) * cand
            new = [y]
        if mask is not None:
            m = mask[:, t][:, None]
            new = [np.where(m, a, b) for a, b in zip(new, states)]
            y = np.where(m, y, 0 * y if zero_output else prev)
        states, prev = new, y
        outputs.append(y)
    return np.stack(outputs, 1), prev, states


def rnn_weights(cell, features, units, reset_after=True):
    g = {"simple": 1, "lstm": 4, "gru": 3}[cell] * units
    bias_shape = (2, g) if cell == "gru" and reset_after else (g,)
    return [f32(0.5 * randn(features, g)), f32(0.5 * randn(units, g)), f32(0.3 * randn(*bias_shape))]


def recurrent_cases():
    out = {}
    x = randn(2, 5, 3)
    mask = np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 1]], dtype=bool)
    for cell, units in (("simple", 4), ("lstm", 4), ("gru", 3)):
        w = rnn_weights(cell, 3, units)
        seq, last, states = rnn_run(cell, x, w, units)
        case = {"x": x, "y": seq, "last": last}
        for i, a in enumerate(w):
            case[f"w{i}"] = a
        # Masked, read backwards, with the final states.
        mseq, mlast, mstates = rnn_run(cell, x, w, units, mask=mask, go_backwards=True)
        case["mask"] = mask
        case["masked_backwards_seq"] = mseq
        case["masked_backwards_last"] = mlast
        for i, s_ in enumerate(mstates):
            case[f"masked_backwards_state{i}"] = s_
        # From given initial states.
        init = [randn(2, units) for _ in states]
        iseq, ilast, _ = rnn_run(cell, x, w, units, initial=init)
        for i, s_ in enumerate(init):
            case[f"initial{i}"] = s_
        case["from_initial_last"] = ilast
        # Bidirectional (concat) over the mask, returning sequences: outputs zeroed where masked.
        fseq, _, _ = rnn_run(cell, x, w, units, mask=mask, zero_output=True)
        bseq, _, _ = rnn_run(cell, x, w, units, mask=mask, go_backwards=True, zero_output=True)
        case["bidirectional"] = np.concatenate([fseq, bseq[:, ::-1]], -1)
        case["dy"] = randn(*seq.shape)
        out[cell] = case
    w = rnn_weights("gru", 3, 3, reset_after=False)
    seq, _, _ = rnn_run("gru", x, w, 3, reset_after=False)
    out["gru_reset_before"] = {"x": x, "w0": w[0], "w1": w[1], "w2": w[2], "y": seq,
                               "dy": randn(*seq.shape)}
    return out


# ---- attention: Keras's MultiHeadAttention and Attention (TF 2.4), forward and backward by hand -


def masked_softmax(s, mask):
    """Keras's Softmax(scores, mask): (1 - mask) * -1e9 added, then a softmax over the last axis."""
    if mask is not None:
        s = s + (1.0 - mask) * -1e9
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def softmax_backward(p, dp):
    return p * (dp - (dp * p).sum(-1, keepdims=True))


def mha_case(b, t, s, dq, dv, dk, heads, key_dim, value_dim=None, out_dim=None, use_bias=True,
             with_key=False, mask=None):
    """MultiHeadAttention on (query, value[, key]) with an attention mask broadcastable to
    (B, T, S): four EinsumDense projections with (D, N, H) kernels, the query scaled by
    1/sqrt(key_dim) after its bias, scores (B, N, T, S) before dropout."""
    hv = value_dim or key_dim
    e = out_dim or dq
    q_in, v_in = randn(b, t, dq), randn(b, s, dv)
    k_in = randn(b, s, dk) if with_key else v_in
    shapes = [((dq, heads, key_dim), (heads, key_dim)), ((k_in.shape[-1], heads, key_dim),
              (heads, key_dim)), ((dv, heads, hv), (heads, hv)), ((heads, hv, e), (e,))]
    kernels = [f32(randn(*ks) * 0.5) for ks, _ in shapes]
    biases = [f32(randn(*bs) * 0.3) if use_bias else 0 for _, bs in shapes]
    scale = 1.0 / np.sqrt(float(key_dim))
    q = (np.einsum("btd,dnh->btnh", q_in, kernels[0]) + biases[0]) * scale
    k = np.einsum("bsd,dnh->bsnh", k_in, kernels[1]) + biases[1]
    v = np.einsum("bsd,dnh->bsnh", v_in, kernels[2]) + biases[2]
    # The mask, (T, S) or (B | 1, T | 1, S | 1), expanded at the heads axis as Keras does.
    m = None if mask is None else mask.astype(np.float64).reshape((-1, 1) + mask.shape[-2:])
    p = masked_softmax(np.einsum("btnh,bsnh->bnts", q, k), m)
    ctx = np.einsum("bnts,bsnh->btnh", p, v)
    y = np.einsum("btnh,nhe->bte", ctx, kernels[3]) + biases[3]
    dy = randn(*y.shape)
    # Backward.
    dctx = np.einsum("bte,nhe->btnh", dy, kernels[3])
    dp = np.einsum("btnh,bsnh->bnts", dctx, v)
    dv_ = np.einsum("bnts,btnh->bsnh", p, dctx)
    ds = softmax_backward(p, dp)
    dq_ = np.einsum("bnts,bsnh->btnh", ds, k) * scale
    dk_ = np.einsum("bnts,btnh->bsnh", ds, q)
    out = {"query": q_in, "value": v_in, "dy": dy, "y": y, "scores": p}
    grads = [dq_, dk_, dv_]
    ins = [q_in, k_in, v_in]
    dins = [np.einsum("btnh,dnh->btd", g, w) for g, w in zip(grads, kernels)]
    weights = []
    dweights = []
    for i in range(3):
        weights.append(kernels[i])
        dweights.append(np.einsum("btd,btnh->dnh", ins[i], grads[i]))
        if use_bias:
            weights.append(biases[i])
            dweights.append(grads[i].sum((0, 1)))
    weights.append(kernels[3])
    dweights.append(np.einsum("btnh,bte->nhe", ctx, dy))
    if use_bias:
        weights.append(biases[3])
        dweights.append(dy.sum((0, 1)))
    for i, (w, dw) in enumerate(zip(weights, dweights)):
        out[f"w{i}"], out[f"dw{i}"] = w, dw
    out["dquery"] = dins[0]
    if with_key:
        out.update(key=k_in, dkey=dins[1], dvalue=dins[2])
    else:
        out["dvalue"] = dins[1] + dins[2]
    if mask is not None:
        out["mask"] = mask
    return out


def causal(t, s):
    """Lower-triangular, aligned top-left: step i attends to 0..i."""
    return np.arange(s)[None, :] <= np.arange(t)[:, None]


def attention_case(b, tq, tv, dim, use_scale=False, is_causal=False, value_mask=None,
                   query_mask=None):
    """Attention on (query, value, key): scores q k^T (times the scale), value and causal masks
    subtract 1e9, a softmax, weights v, then rows of masked queries zeroed."""
    q, v, k = randn(b, tq, dim), randn(b, tv, dim + 1), randn(b, tv, dim)
    scale = f32(1.7) if use_scale else 1.0
    raw = q @ k.transpose(0, 2, 1)
    mask = np.ones((b, tq, tv), dtype=bool)
    if value_mask is not None:
        mask &= value_mask[:, None, :]
    if is_causal:
        mask &= causal(tq, tv)[None]
    p = masked_softmax(raw * scale, mask.astype(np.float64))
    qm = np.ones((b, tq, 1)) if query_mask is None else query_mask[..., None].astype(np.float64)
    y = (p @ v) * qm
    dy = randn(*y.shape)
    dyq = dy * qm
    ds = softmax_backward(p, dyq @ v.transpose(0, 2, 1))
    out = {"query": q, "value": v, "key": k, "dy": dy, "y": y, "scores": p,
           "dquery": ds @ k * scale, "dkey": ds.transpose(0, 2, 1) @ q * scale,
           "dvalue": p.transpose(0, 2, 1) @ dyq}
    if use_scale:
        out.update(w0=np.array(scale), dw0=np.array((ds * raw).sum()))
    if value_mask is not None:
        out["value_mask"] = value_mask
    if query_mask is not None:
        out["query_mask"] = query_mask
    return out


def attention_cases():
    padding = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], dtype=bool)
    return {
        "mha_basic": mha_case(2, 3, 4, 5, 6, 6, heads=2, key_dim=3),
        "mha_nobias": mha_case(2, 3, 4, 5, 6, 6, heads=3, key_dim=2, use_bias=False),
        "mha_key_padding": mha_case(2, 3, 5, 4, 3, 2, heads=2, key_dim=3, value_dim=4,
                                    out_dim=7, with_key=True, mask=padding[:, None, :]),
        "mha_causal": mha_case(2, 4, 3, 5, 5, 5, heads=2, key_dim=2, mask=causal(4, 3)),
        "mha_causal_padding": mha_case(2, 5, 5, 4, 4, 4, heads=2, key_dim=3,
                                       mask=causal(5, 5)[None] & padding[:, None, :]),
        "attention_scale": attention_case(2, 3, 4, 5, use_scale=True),
        "attention_causal_masks": attention_case(
            2, 4, 5, 3, is_causal=True, value_mask=padding,
            query_mask=np.array([[1, 1, 0, 1], [1, 0, 1, 1]], dtype=bool)),
    }


# ---- 3-D layers: Conv3D and the 3-D poolings (NDHWC), as conv2d_case and pool_case -----------


def conv3d_case(x_shape, kernel, filters, strides, padding, dilation, activation, use_bias,
                groups=1):
    """Keras's Conv3D: x (n, d, h, w, c), kernel (kd, kh, kw, c / groups, filters)."""
    n, size, c = x_shape[0], x_shape[1:4], x_shape[4]
    cg, og = c // groups, filters // groups
    x = randn(*x_shape)
    w = f32(randn(*kernel, cg, filters) / np.sqrt(np.prod(kernel) * cg))
    b = f32(randn(filters) * 0.5)
    oshape, pad = zip(*(spatial(size[i], kernel[i], strides[i], dilation[i], padding)
                        for i in range(3)))
    padded = [max((oshape[i] - 1) * strides[i] + (kernel[i] - 1) * dilation[i] + 1,
                  size[i] + pad[i]) for i in range(3)]
    xp = np.zeros((n, *padded, c))
    inside = (slice(None),) + tuple(slice(pad[i], pad[i] + size[i]) for i in range(3)) + (
        slice(None),)
    xp[inside] = x

    def taps():
        """Output index, kernel tap, padded input index and the channels of each group."""
        for o, k, g in itertools.product(np.ndindex(*oshape), np.ndindex(*kernel), range(groups)):
            at = tuple(o[i] * strides[i] + k[i] * dilation[i] for i in range(3))
            yield o, k, at, slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)

    z = np.zeros((n, *oshape, filters))
    for o, k, at, ci, co in taps():
        z[(slice(None), *o, co)] += xp[(slice(None), *at, ci)] @ w[(*k, slice(None), co)]
    if use_bias:
        z += b
    y = act_forward(activation, z)
    dy = randn(*y.shape)
    dz = act_backward(activation, z, dy)
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for o, k, at, ci, co in taps():
        dxp[(slice(None), *at, ci)] += dz[(slice(None), *o, co)] @ w[(*k, slice(None), co)].T
        dw[(*k, slice(None), co)] += xp[(slice(None), *at, ci)].T @ dz[(slice(None), *o, co)]
    out = {"x": x, "w0": w, "dy": dy, "y": y, "dx": dxp[inside], "dw0": dw}
    if use_bias:
        out.update(w1=b, dw1=dz.sum((0, 1, 2, 3)))
    return out


def pool3d_case(kind, x_shape, pool, strides, padding, ties=False):
    """Max pooling's gradient goes to the first maximum of a window in row-major (d, h, w) order,
    padding never wins; the average divides by the count of elements inside the input."""
    n, size, c = x_shape[0], x_shape[1:4], x_shape[4]
    x = randn(*x_shape)
    if ties:  # whole numbers: windows with equal maxima, also across depth
        x = np.round(x) + 0.0
    oshape, pad = zip(*(spatial(size[i], pool[i], strides[i], 1, padding) for i in range(3)))
    y = np.zeros((n, *oshape, c))
    dy = randn(*y.shape)
    dx = np.zeros_like(x)
    bn, cn = np.ogrid[:n, :c]
    for o in np.ndindex(*oshape):
        lo = [max(o[i] * strides[i] - pad[i], 0) for i in range(3)]
        hi = [min(o[i] * strides[i] - pad[i] + pool[i], size[i]) for i in range(3)]
        box = (slice(None),) + tuple(slice(lo[i], hi[i]) for i in range(3))
        win = x[box]
        if kind == "max":
            flat = win.reshape(n, -1, c)
            y[(slice(None), *o)] = flat.max(1)
            r, s, t = np.unravel_index(flat.argmax(1), win.shape[1:4])  # the first maximum
            dx[bn, lo[0] + r, lo[1] + s, lo[2] + t, cn] += dy[(slice(None), *o)]
        else:
            count = np.prod([hi[i] - lo[i] for i in range(3)])
            y[(slice(None), *o)] = win.sum((1, 2, 3)) / count
            dx[box] += dy[(slice(None), *o)][:, None, None, None, :] / count
    return {"x": x, "dy": dy, "y": y, "dx": dx}


def global_pool3d_case(kind, x_shape):
    """The mean or max over depth, height and width; tied maxima share the gradient equally, as
    weft's max (and TensorFlow's reduce_max)."""
    x = randn(*x_shape)
    if kind == "max":
        y = x.max((1, 2, 3))
        hit = x == y[:, None, None, None, :]
        share = hit / hit.sum((1, 2, 3), keepdims=True)
    else:
        y = x.mean((1, 2, 3))
        share = np.full(x_shape, 1 / np.prod(x_shape[1:4]))
    dy = randn(*y.shape)
    return {"x": x, "dy": dy, "y": y, "dx": share * dy[:, None, None, None, :]}


def layers_3d_cases():
    return {
        "conv3d_valid": conv3d_case((2, 4, 5, 4, 3), (2, 3, 2), 4, (1, 1, 1), "valid", (1, 1, 1),
                                    "", True),
        "conv3d_same_strided": conv3d_case((2, 5, 4, 6, 2), (3, 3, 3), 2, (2, 1, 2), "same",
                                           (1, 1, 1), "tanh", True),
        "conv3d_dilated_nobias": conv3d_case((1, 5, 6, 5, 2), (2, 2, 3), 3, (1, 1, 1), "valid",
                                             (2, 1, 2), "", False),
        "conv3d_grouped": conv3d_case((2, 3, 4, 4, 4), (2, 2, 2), 6, (1, 1, 1), "same",
                                      (1, 1, 1), "", True, groups=2),
        "maxpool3d_valid": pool3d_case("max", (2, 4, 6, 5, 3), (2, 2, 2), (2, 2, 2), "valid"),
        "maxpool3d_same_strided": pool3d_case("max", (2, 5, 5, 4, 2), (3, 3, 2), (2, 2, 1),
                                              "same", ties=True),
        "avgpool3d_valid": pool3d_case("avg", (2, 4, 4, 6, 2), (2, 2, 3), (2, 2, 3), "valid"),
        "avgpool3d_same": pool3d_case("avg", (1, 5, 4, 5, 2), (3, 2, 3), (2, 1, 2), "same"),
        "global_avg_3d": global_pool3d_case("avg", (2, 3, 4, 2, 5)),
        "global_max_3d": global_pool3d_case("max", (2, 3, 4, 2, 5)),
    }


def groups():
    return {
        "dense": lambda: {
            "dense_tanh": dense_case((4, 5), 3, "tanh", True),
            "dense_rank3_nobias": dense_case((2, 3, 5), 4, "", False),
        },
        "conv": lambda: {
            "conv_valid": conv2d_case((2, 5, 6, 3), (3, 2), 4, (1, 1), "valid", (1, 1), "", True),
            "conv_same_strided": conv2d_case((2, 7, 6, 3), (3, 3), 2, (2, 2), "same", (1, 1),
                                             "tanh", True),
            "conv_dilated_nobias": conv2d_case((1, 7, 8, 2), (2, 3), 3, (1, 1), "valid", (2, 2),
                                               "", False),
            "conv_same_dilated": conv2d_case((2, 5, 5, 2), (3, 3), 2, (1, 1), "same", (2, 1),
                                             "sigmoid", True),
        },
        "pooling": lambda: {
            "max_valid": pool_case("max", (2, 6, 5, 3), (2, 2), (2, 2), "valid"),
            "max_same_strided": pool_case("max", (2, 7, 6, 2), (3, 3), (2, 2), "same"),
            "avg_valid": pool_case("avg", (2, 6, 5, 3), (2, 2), (2, 2), "valid"),
            "avg_same": pool_case("avg", (2, 5, 6, 2), (3, 3), (2, 1), "same"),
            "global_avg": global_avg_pool_case((2, 4, 3, 5)),
        },
        "core": lambda: {
            "flatten": reshape_case((2, 3, 4, 2), (2, 24)),
            "reshape": reshape_case((2, 3, 4, 2), (2, 4, 6)),
            "softmax": activation_case("softmax", (3, 5)),
            "relu": activation_case("relu", (3, 5)),
            "embedding": embedding_case(7, 5, (3, 4)),
        },
        "normalization": lambda: {
            "bn_train_2d": batch_norm_case((6, 4), -1, True),
            "bn_train_4d_axis1": batch_norm_case((2, 3, 4, 5), 1, True),
            "bn_inference": batch_norm_case((5, 3, 4), -1, False),
            "ln_last": layer_norm_case((3, 6), -1),
            "ln_axis1": layer_norm_case((2, 5, 3), 1),
        },
        "losses": loss_cases,
        "metrics": metric_cases,
        "more_losses": more_loss_cases,
        "more_metrics": more_metric_cases,
        "more_layers": more_layer_cases,
        "recurrent": recurrent_cases,
        "attention": attention_cases,
        "layers_3d": layers_3d_cases,  # last: the groups before it keep their draws from rng
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    wanted = sys.argv[2:] or list(groups())
    os.makedirs(out_dir, exist_ok=True)
    all_groups = groups()
    for group in all_groups:  # every group draws from rng, so each is made in a fixed order
        cases = all_groups[group]()
        if group not in wanted:
            continue
        os.makedirs(os.path.join(out_dir, group), exist_ok=True)
        for case, arrays in cases.items():
            for name, value in arrays.items():
                np.save(os.path.join(out_dir, group, f"{case}.{name}.npy"), np.asarray(value))
    unknown = set(wanted) - set(all_groups)
    if unknown:
        sys.exit(f"unknown groups: {sorted(unknown)}")


if __name__ == "__main__":
    main()
