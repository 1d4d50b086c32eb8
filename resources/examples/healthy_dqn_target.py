"""A healthy DQN update with a target network.

`q_net` and `target_net` are two separate Keras models of the same shape. The
TD target `r + gamma * max_a target_net(s')[a]` is computed inside the tape
(without `tf.stop_gradient`), so the loss reads the target network's weights;
but `train_step` (a `tf.function`) differentiates and updates
`q_net.trainable_variables` only, as it should. Every `TARGET_SYNC` updates the
target network is refreshed by copying the weights,
`target_net.set_weights(q_net.get_weights())`.

The environment is a 7-cell corridor (start in the middle, reward 1 at the
right end, 0 at the left end) with one-hot observations. `--episodes`
(default 15).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

N_STATES = 7
N_ACTIONS = 2  # 0: left, 1: right
GAMMA = 0.9
BATCH_SIZE = 32
TARGET_SYNC = 10


def q_network(name):
    return keras.Sequential(
        [
            keras.Input((N_STATES,)),
            keras.layers.Dense(32, activation="relu", name=f"{name}_hidden"),
            keras.layers.Dense(N_ACTIONS, name=f"{name}_q"),
        ],
        name=name,
    )


class Corridor:
    def reset(self):
        self.pos = N_STATES // 2
        return self.obs()

    def obs(self):
        return np.eye(N_STATES, dtype="float32")[self.pos]

    def step(self, action):
        self.pos += 1 if action == 1 else -1
        done = self.pos in (0, N_STATES - 1)
        reward = 1.0 if self.pos == N_STATES - 1 else 0.0
        return self.obs(), reward, done


keras.utils.set_random_seed(0)
q_net = q_network("q_net")
target_net = q_network("target_net")
target_net.set_weights(q_net.get_weights())
optimizer = keras.optimizers.Adam(learning_rate=1e-3)


@tf.function
def train_step(obs, action, reward, next_obs, done):
    with tf.GradientTape() as tape:
        next_q = tf.reduce_max(target_net(next_obs), axis=1)
        td_target = reward + GAMMA * (1.0 - done) * next_q
        q = tf.reduce_sum(q_net(obs) * tf.one_hot(action, N_ACTIONS), axis=1)
        loss = tf.reduce_mean(tf.square(td_target - q))
    grads = tape.gradient(loss, q_net.trainable_variables)
    optimizer.apply_gradients(zip(grads, q_net.trainable_variables))
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=15)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    env, replay, updates = Corridor(), [], 0
    for episode in range(args.episodes):
        obs, done, steps, loss = env.reset(), False, 0, None
        while not done and steps < 30:
            epsilon = max(0.1, 1.0 - episode / 10)
            action = (
                int(rng.integers(N_ACTIONS))
                if rng.random() < epsilon
                else int(np.argmax(q_net(obs[None])[0]))
            )
            next_obs, reward, done = env.step(action)
            replay.append((obs, action, reward, next_obs, float(done)))
            obs, steps = next_obs, steps + 1
            if len(replay) >= BATCH_SIZE:
                batch = [replay[i] for i in rng.integers(len(replay), size=BATCH_SIZE)]
                o, a, r, o2, d = (np.array(column) for column in zip(*batch))
                loss = train_step(o, a.astype("int32"), r.astype("float32"), o2, d.astype("float32"))
                updates += 1
                if updates % TARGET_SYNC == 0:
                    target_net.set_weights(q_net.get_weights())
        print(f"episode {episode + 1}: {steps} steps, loss {'-' if loss is None else f'{float(loss):.4f}'}")
