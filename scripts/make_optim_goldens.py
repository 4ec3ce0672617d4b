#!/usr/bin/python3
"""Golden files for weft::optim, computed by NumPy (Debian's python3-numpy).

  make_optim_goldens.py OUT_DIR

For each optimizer case (in float64 and float32) it writes the two variables' initial values
<case>.v<k>.init.npy, the gradient of every step <case>.v<k>.g<t>.npy, the variable after every
step <case>.v<k>.w<t>.npy and each slot after the last step <case>.v<k>.slot.<name>.npy; for the
schedules, schedules.steps.npy and schedules.<name>.npy (the rate at each step). The update rules
are tf.keras 2.x's (OptimizerV2 and its training ops) and keras.optimizers.AdamW's weight decay,
written here from their documented formulas, independently of weft. Files are replaced atomically,
so tests running in parallel never read a half-written one. weft/optim/optimizer_test.cc and
schedules_test.cc run this script.
"""
import math
import os
import sys

import numpy as np

STEPS = 5
SHAPES = [(2, 3), (4,)]
# Per-step gradient scales (a large one, then smaller ones, so that amsgrad's max matters and
# clipping applies on some steps only), and per-variable scales (v1 stays under clipnorm).
STEP_SCALE = [1.0, 0.5, 2.0, 0.1, 0.3]
VAR_SCALE = [1.0, 0.1]


# ---- schedules (Keras semantics; CosineDecay with Keras 3's warmup) ---------------------------

def exponential_decay(initial, decay_steps, rate, staircase=False):
    def f(step):
        p = step / decay_steps
        if staircase:
            p = math.floor(p)
        return initial * rate ** p
    return f


def piecewise_constant(boundaries, values):
    def f(step):
        for b, v in zip(boundaries, values):
            if step <= b:
                return v
        return values[-1]
    return f


def cosine_decay(initial, decay_steps, alpha=0.0, warmup_target=None, warmup_steps=0):
    def decay(step, start):
        cosine = 0.5 * (1 + math.cos(math.pi * step / decay_steps))
        return start * ((1 - alpha) * cosine + alpha)

    def f(step):
        if warmup_target is None:
            return decay(min(step, decay_steps), initial)
        step = min(step, decay_steps + warmup_steps)
        if step < warmup_steps:
            return (warmup_target - initial) * (step / warmup_steps) + initial
        return decay(step - warmup_steps, warmup_target)
    return f


SCHEDULES = {
    "exponential": exponential_decay(0.1, 10, 0.5),
    "exponential_staircase": exponential_decay(0.1, 10, 0.5, staircase=True),
    "piecewise": piecewise_constant([10, 20], [1.0, 0.5, 0.1]),
    "cosine": cosine_decay(0.1, 100),
    "cosine_alpha": cosine_decay(0.1, 100, alpha=0.2),
    "cosine_warmup": cosine_decay(0.0, 100, alpha=0.1, warmup_target=0.5, warmup_steps=20),
    "cosine_warmup_from_nonzero": cosine_decay(0.01, 50, warmup_target=0.1, warmup_steps=10),
}
SCHEDULE_STEPS = [0, 1, 5, 9, 10, 11, 19, 20, 21, 30, 50, 60, 99, 100, 101, 119, 120, 121, 150,
                  1000]


# ---- optimizers --------------------------------------------------------------------------------

def sgd(lr=0.01, momentum=0.0, nesterov=False):
    slots = ["momentum"] if momentum else []

    def update(t, lr_t, g, w, s, c):
        if not momentum:
            return w - g * c(lr_t)
        m = s["momentum"] * c(momentum) - g * c(lr_t)
        s["momentum"] = m
        return w + (m * c(momentum) - g * c(lr_t) if nesterov else m)
    return lr, slots, {}, update


def adam(lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, weight_decay=0.0):
    slots = ["m", "v"] + (["vhat"] if amsgrad else [])

    def update(t, lr_t, g, w, s, c):
        if weight_decay:
            w = w - w * c(weight_decay) * c(lr_t)  # keras.optimizers.AdamW, before the step
        step = t + 1
        alpha = lr_t * math.sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)
        s["m"] = s["m"] + (g - s["m"]) * (c(1) - c(beta_1))
        s["v"] = s["v"] + (g * g - s["v"]) * (c(1) - c(beta_2))
        v = s["v"]
        if amsgrad:
            s["vhat"] = np.maximum(s["vhat"], s["v"])
            v = s["vhat"]
        return w - (s["m"] * c(alpha)) / (np.sqrt(v) + c(epsilon))
    return lr, slots, {}, update


def adamw(lr=0.001, weight_decay=0.004, **kw):
    return adam(lr=lr, weight_decay=weight_decay, **kw)


def rmsprop(lr=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    slots = ["rms"] + (["momentum"] if momentum else []) + (["mg"] if centered else [])

    def update(t, lr_t, g, w, s, c):
        one_minus_rho = c(1) - c(rho)
        if not momentum:
            # tf.keras 2.x's Python update: epsilon outside the square root.
            s["rms"] = c(rho) * s["rms"] + one_minus_rho * (g * g)
            denom = s["rms"]
            if centered:
                s["mg"] = c(rho) * s["mg"] + one_minus_rho * g
                denom = s["rms"] - s["mg"] * s["mg"]
            return w - c(lr_t) * g / (np.sqrt(denom) + c(epsilon))
        # ResourceApply(Centered)RMSProp: epsilon inside the square root.
        s["rms"] = s["rms"] + (g * g - s["rms"]) * one_minus_rho
        denom = s["rms"] + c(epsilon)
        if centered:
            s["mg"] = s["mg"] + (g - s["mg"]) * one_minus_rho
            denom = s["rms"] - s["mg"] * s["mg"] + c(epsilon)
        s["momentum"] = s["momentum"] * c(momentum) + c(lr_t) * g / np.sqrt(denom)
        return w - s["momentum"]
    return lr, slots, {}, update


def adagrad(lr=0.001, initial_accumulator_value=0.1, epsilon=1e-7):
    def update(t, lr_t, g, w, s, c):
        s["accumulator"] = s["accumulator"] + g * g
        return w - g * c(lr_t) / (np.sqrt(s["accumulator"]) + c(epsilon))
    return lr, ["accumulator"], {"accumulator": initial_accumulator_value}, update


def adadelta(lr=0.001, rho=0.95, epsilon=1e-7):
    def update(t, lr_t, g, w, s, c):
        s["accum_grad"] = s["accum_grad"] * c(rho) + g * g * (c(1) - c(rho))
        step = np.sqrt(s["accum_var"] + c(epsilon)) / np.sqrt(s["accum_grad"] + c(epsilon)) * g
        s["accum_var"] = s["accum_var"] * c(rho) + step * step * (c(1) - c(rho))
        return w - step * c(lr_t)
    return lr, ["accum_grad", "accum_var"], {}, update


def adamax(lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    def update(t, lr_t, g, w, s, c):
        s["m"] = s["m"] + (g - s["m"]) * (c(1) - c(beta_1))
        s["v"] = np.maximum(c(beta_2) * s["v"], np.abs(g))
        return w - c(lr_t / (1 - beta_1 ** (t + 1))) * (s["m"] / (s["v"] + c(epsilon)))
    return lr, ["m", "v"], {}, update


def nadam(lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    # tf.keras 2.x's Nadam: the momentum cache is the product of the schedule's values so far.
    mu = lambda step: beta_1 * (1 - 0.5 * 0.96 ** (0.004 * step))  # noqa: E731
    cache = {"m_schedule": 1.0}

    def update(t, lr_t, g, w, s, c):
        step = t + 1
        if cache.get("step") != step:  # once per step, not per variable (a new case: step 1)
            cache["m_schedule"] = (1.0 if step == 1 else cache["m_schedule"]) * mu(step)
            cache["step"] = step
        m_schedule_new = cache["m_schedule"]
        m_schedule_next = m_schedule_new * mu(step + 1)
        g_prime = g / c(1 - m_schedule_new)
        s["m"] = c(beta_1) * s["m"] + (c(1) - c(beta_1)) * g
        s["v"] = c(beta_2) * s["v"] + (c(1) - c(beta_2)) * g * g
        m_prime = s["m"] / c(1 - m_schedule_next)
        v_prime = s["v"] / c(1 - beta_2 ** step)
        m_bar = c(1 - mu(step)) * g_prime + c(mu(step + 1)) * m_prime
        return w - c(lr_t) * m_bar / (np.sqrt(v_prime) + c(epsilon))
    return lr, ["m", "v"], {}, update


def ftrl(lr=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1, l1=0.0, l2=0.0,
         l2_shrinkage=0.0, beta=0.0):
    p = -learning_rate_power

    def update(t, lr_t, g, w, s, c):
        l2_adjusted = l2 + beta / (2 * lr_t)
        n, z = s["accumulator"], s["linear"]
        n_new = n + g * g
        g_shrunk = g + c(2 * l2_shrinkage) * w
        z = z + g_shrunk - (n_new ** c(p) - n ** c(p)) / c(lr_t) * w
        quadratic = n_new ** c(p) / c(lr_t) + c(2 * l2_adjusted)
        w = np.where(np.abs(z) > c(l1), (c(l1) * np.sign(z) - z) / quadratic, c(0))
        s["accumulator"], s["linear"] = n_new, z
        return w.astype(g.dtype)
    return lr, ["accumulator", "linear"], {"accumulator": initial_accumulator_value}, update


# Keras' clipping order: clipvalue, clipnorm (per tensor), global_clipnorm.
def clip(grads, clipvalue=None, clipnorm=None, global_clipnorm=None):
    c = lambda g, x: g.dtype.type(x)  # noqa: E731
    if clipvalue is not None:
        grads = [np.clip(g, c(g, -clipvalue), c(g, clipvalue)) for g in grads]
    if clipnorm is not None:
        out = []
        for g in grads:
            n = math.sqrt(np.sum(g.astype(np.float64) ** 2))
            out.append(g * c(g, clipnorm / n) if n > clipnorm else g)
        grads = out
    if global_clipnorm is not None:
        n = math.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
        if n > global_clipnorm:
            grads = [g * c(g, global_clipnorm / n) for g in grads]
    return grads


# name: (optimizer, clip options). weft/optim/optimizer_test.cc builds the same optimizers.
CASES = {
    "sgd": (sgd(lr=0.1), {}),
    "sgd_defaults": (sgd(), {}),
    "sgd_momentum": (sgd(lr=0.1, momentum=0.9), {}),
    "sgd_nesterov": (sgd(lr=0.1, momentum=0.9, nesterov=True), {}),
    "sgd_clipnorm": (sgd(lr=0.1), {"clipnorm": 1.0}),
    "sgd_clipvalue": (sgd(lr=0.1), {"clipvalue": 0.5}),
    "sgd_global_clipnorm": (sgd(lr=0.1), {"global_clipnorm": 1.0}),
    "sgd_clipvalue_clipnorm": (sgd(lr=0.1), {"clipvalue": 0.5, "clipnorm": 0.8}),
    "sgd_exponential_decay": (sgd(lr=exponential_decay(0.1, 2, 0.5, staircase=True)), {}),
    "adam": (adam(lr=0.01), {}),
    "adam_defaults": (adam(), {}),
    "adam_amsgrad": (adam(lr=0.01, amsgrad=True), {}),
    "adam_betas": (adam(lr=0.02, beta_1=0.5, beta_2=0.75, epsilon=1e-3), {}),
    "adam_global_clipnorm": (adam(lr=0.01), {"global_clipnorm": 1.0}),
    "adam_piecewise": (adam(lr=piecewise_constant([1, 3], [0.01, 0.005, 0.001])), {}),
    "adamw": (adamw(lr=0.01, weight_decay=0.1), {}),
    "adamw_defaults": (adamw(), {}),
    "adamw_amsgrad": (adamw(lr=0.01, weight_decay=0.1, amsgrad=True), {}),
    "rmsprop": (rmsprop(lr=0.01), {}),
    "rmsprop_momentum": (rmsprop(lr=0.01, momentum=0.9), {}),
    "rmsprop_centered": (rmsprop(lr=0.01, centered=True), {}),
    "rmsprop_centered_momentum": (rmsprop(lr=0.01, rho=0.8, momentum=0.5, centered=True), {}),
    "adagrad": (adagrad(lr=0.1), {}),
    "adagrad_options": (adagrad(lr=0.05, initial_accumulator_value=0.5, epsilon=1e-3), {}),
    "adadelta": (adadelta(lr=1.0), {}),
    "adadelta_options": (adadelta(lr=0.5, rho=0.8, epsilon=1e-4), {}),
    "adamax": (adamax(lr=0.01), {}),
    "adamax_betas": (adamax(lr=0.02, beta_1=0.5, beta_2=0.75, epsilon=1e-3), {}),
    "nadam": (nadam(lr=0.01), {}),
    "nadam_betas": (nadam(lr=0.02, beta_1=0.5, beta_2=0.75, epsilon=1e-3), {}),
    "ftrl": (ftrl(lr=0.1), {}),
    "ftrl_l1_l2": (ftrl(lr=0.1, l1=0.05, l2=0.1, beta=0.5), {}),
    "ftrl_power_shrinkage": (ftrl(lr=0.2, learning_rate_power=-0.7, l1=0.01,
                                  l2_shrinkage=0.3), {}),
}


def save(path, a):
    # A hidden temporary name that no reader's file pattern matches, then an atomic rename.
    tmp = os.path.join(os.path.dirname(path), f".{os.getpid()}.{os.path.basename(path)}.tmp")
    with open(tmp, "wb") as f:
        np.save(f, a)
    os.replace(tmp, path)


def run_case(out_dir, name, optimizer, clip_options, dtype, rng):
    lr, slot_names, slot_init, update = optimizer
    lr_fn = lr if callable(lr) else (lambda step: lr)
    c = dtype.type
    ws = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    grads = [[(rng.standard_normal(shape) * STEP_SCALE[t] * VAR_SCALE[k]).astype(dtype)
              for k, shape in enumerate(SHAPES)] for t in range(STEPS)]
    slots = [{s: np.full(w.shape, slot_init.get(s, 0.0), dtype) for s in slot_names} for w in ws]
    for k, w in enumerate(ws):
        save(os.path.join(out_dir, f"{name}.v{k}.init.npy"), w)
    for t in range(STEPS):
        gs = clip(grads[t], **clip_options)
        for k in range(len(ws)):
            ws[k] = update(t, lr_fn(t), gs[k], ws[k], slots[k], c)
            assert ws[k].dtype == dtype, (name, ws[k].dtype)
            save(os.path.join(out_dir, f"{name}.v{k}.g{t}.npy"), grads[t][k])
            save(os.path.join(out_dir, f"{name}.v{k}.w{t}.npy"), ws[k])
    for k in range(len(ws)):
        for s, value in slots[k].items():
            save(os.path.join(out_dir, f"{name}.v{k}.slot.{s}.npy"), value.astype(dtype))


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20240611)
    for name, (optimizer, clip_options) in CASES.items():
        for suffix, dtype in (("f64", np.dtype(np.float64)), ("f32", np.dtype(np.float32))):
            run_case(out_dir, f"{name}_{suffix}", optimizer, clip_options, dtype, rng)
    save(os.path.join(out_dir, "schedules.steps.npy"), np.array(SCHEDULE_STEPS, np.int64))
    for name, f in SCHEDULES.items():
        values = np.array([f(s) for s in SCHEDULE_STEPS], np.float64)
        save(os.path.join(out_dir, f"schedules.{name}.npy"), values)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write(sys.argv[1])
