"""A dueling DQN with experience replay and a periodically synced target network on a synthetic grid world, trained with a compiled train_step.

Pattern: Mnih et al. 2015 DQN loop in TF2 (epsilon-greedy, replay buffer, TD target from the target network under tf.stop_gradient inside the tape, @tf.function train_step differentiating q_net only, target network refreshed with set_weights every TARGET_SYNC updates) with a Wang et al. 2016 dueling head (subclassed Keras model)
Family: RL loops
Bug: the dueling head returns `advantage - mean(advantage)` and forgets to add the state value, so the `value` layer's kernel and bias get a None gradient (Keras warns and skips them); the target network stays legitimately untrained in both variants
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--episodes", type=int, default=6)
args = parser.parse_args()

SIZE, N_ACTIONS, GAMMA, BATCH_SIZE, TARGET_SYNC = 5, 4, 0.95, 32, 8
MOVES = np.array([[0, 1], [0, -1], [1, 0], [-1, 0]])
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python


class GridWorld:
    def reset(self):
        self.pos = np.array([0, 0])
        return self.obs()

    def obs(self):
        board = np.zeros((SIZE, SIZE), "float32")
        board[tuple(self.pos)] = 1.0
        return board.ravel()

    def step(self, action):
        self.pos = np.clip(self.pos + MOVES[action], 0, SIZE - 1)
        done = bool((self.pos == SIZE - 1).all())
        return self.obs(), (1.0 if done else -0.01), done


class DuelingQNetwork(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(64, activation="relu")
        self.value = tf.keras.layers.Dense(1)
        self.advantage = tf.keras.layers.Dense(N_ACTIONS)

    def call(self, obs):
        h = self.hidden(obs)
        value, advantage = self.value(h), self.advantage(h)
        centered = advantage - tf.reduce_mean(advantage, axis=1, keepdims=True)
        return centered if args.bug else value + centered


q_net, target_net = DuelingQNetwork(), DuelingQNetwork()
q_net(np.zeros((1, SIZE * SIZE), "float32"))
target_net(np.zeros((1, SIZE * SIZE), "float32"))
target_net.set_weights(q_net.get_weights())
optimizer = tf.keras.optimizers.Adam(1e-3)
huber = tf.keras.losses.Huber()


@tf.function
def train_step(obs, action, reward, next_obs, done):
    with tf.GradientTape() as tape:
        next_q = tf.reduce_max(target_net(next_obs), axis=1)
        target = tf.stop_gradient(reward + GAMMA * (1.0 - done) * next_q)
        q = tf.reduce_sum(q_net(obs) * tf.one_hot(action, N_ACTIONS), axis=1)
        loss = huber(target, q)
    grads = tape.gradient(loss, q_net.trainable_variables)
    optimizer.apply_gradients(zip(grads, q_net.trainable_variables))
    return loss


env, replay, updates = GridWorld(), [], 0
for episode in range(args.episodes):
    obs, done, steps, loss = env.reset(), False, 0, None
    while not done and steps < 25:
        epsilon = max(0.1, 1.0 - episode / 5)
        if rng.random() < epsilon:
            action = int(rng.integers(N_ACTIONS))
        else:
            action = int(np.argmax(q_net(obs[None])[0]))
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
    print(f"episode {episode}: {steps} steps, loss {'-' if loss is None else f'{float(loss):.4f}'}")
