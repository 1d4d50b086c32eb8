"""DDPG on a synthetic 1-D point-mass control task: actor, critic and their target networks, compiled critic and actor updates, soft target updates via assign.

Pattern: Keras example "Deep Deterministic Policy Gradient (DDPG)" (get_actor / get_critic with state and action branches, Buffer with @tf.function update: critic tape with y from target_actor/target_critic inside the tape, actor tape maximising critic(s, actor(s)), @tf.function update_target(target, original, tau) with a.assign(b * tau + a * (1 - tau)), Ornstein-Uhlenbeck-free Gaussian exploration)
Family: RL loops
Bug: the critic's variable list is taken from the wrong network (`critic_vars = target_critic.trainable_variables`): the critic loss is differentiated w.r.t. the target critic (which the loss does read) and the optimizer updates the target critic, so `critic_model` is read by the loss but never trained
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--episodes", type=int, default=3)
args = parser.parse_args()

NUM_STATES, NUM_ACTIONS, UPPER_BOUND = 2, 1, 1.0
GAMMA, TAU, BATCH_SIZE = 0.99, 0.005, 32
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
layers = tf.keras.layers


class PointMass:
    def reset(self):
        self.state = np.array([rng.uniform(-1, 1), 0.0])
        return self.state.astype("float32")

    def step(self, force):
        pos, vel = self.state
        vel = 0.9 * vel + 0.1 * float(force)
        pos = np.clip(pos + 0.1 * vel, -2, 2)
        self.state = np.array([pos, vel])
        return self.state.astype("float32"), -(pos ** 2) - 0.01 * float(force) ** 2


def get_actor():
    last_init = tf.keras.initializers.RandomUniform(minval=-0.003, maxval=0.003)
    inputs = layers.Input(shape=(NUM_STATES,))
    out = layers.Dense(64, activation="relu")(inputs)
    out = layers.Dense(64, activation="relu")(out)
    outputs = layers.Dense(1, activation="tanh", kernel_initializer=last_init)(out) * UPPER_BOUND
    return tf.keras.Model(inputs, outputs)


def get_critic():
    state_input = layers.Input(shape=(NUM_STATES,))
    state_out = layers.Dense(32, activation="relu")(layers.Dense(16, activation="relu")(state_input))
    action_input = layers.Input(shape=(NUM_ACTIONS,))
    action_out = layers.Dense(32, activation="relu")(action_input)
    concat = layers.Concatenate()([state_out, action_out])
    out = layers.Dense(64, activation="relu")(concat)
    outputs = layers.Dense(1)(out)
    return tf.keras.Model([state_input, action_input], outputs)


actor_model, critic_model = get_actor(), get_critic()
target_actor, target_critic = get_actor(), get_critic()
target_actor.set_weights(actor_model.get_weights())
target_critic.set_weights(critic_model.get_weights())
critic_optimizer = tf.keras.optimizers.Adam(0.002)
actor_optimizer = tf.keras.optimizers.Adam(0.001)
critic_vars = (target_critic if args.bug else critic_model).trainable_variables


@tf.function
def update_critic(state_batch, action_batch, reward_batch, next_state_batch):
    with tf.GradientTape() as tape:
        target_actions = target_actor(next_state_batch, training=True)
        y = reward_batch + GAMMA * target_critic([next_state_batch, target_actions], training=True)
        critic_value = critic_model([state_batch, action_batch], training=True)
        critic_loss = tf.reduce_mean(tf.square(y - critic_value))
    critic_grad = tape.gradient(critic_loss, critic_vars)
    critic_optimizer.apply_gradients(zip(critic_grad, critic_vars))
    return critic_loss


@tf.function
def update_actor(state_batch):
    with tf.GradientTape() as tape:
        actions = actor_model(state_batch, training=True)
        critic_value = critic_model([state_batch, actions], training=True)
        actor_loss = -tf.reduce_mean(critic_value)
    actor_grad = tape.gradient(actor_loss, actor_model.trainable_variables)
    actor_optimizer.apply_gradients(zip(actor_grad, actor_model.trainable_variables))
    return actor_loss


@tf.function
def update_target(target, original, tau):
    for (a, b) in zip(target.variables, original.variables):
        a.assign(b * tau + a * (1 - tau))


env, buffer = PointMass(), []
for episode in range(args.episodes):
    prev_state, episodic_reward = env.reset(), 0.0
    for _ in range(40):
        action = float(actor_model(prev_state[None])[0, 0]) + 0.2 * rng.normal()
        action = np.clip(action, -UPPER_BOUND, UPPER_BOUND)
        state, reward = env.step(action)
        buffer.append((prev_state, [action], [reward], state))
        episodic_reward += reward
        if len(buffer) >= BATCH_SIZE:
            batch = [buffer[i] for i in rng.integers(len(buffer), size=BATCH_SIZE)]
            s, a, r, s2 = (tf.convert_to_tensor(np.array(c), tf.float32) for c in zip(*batch))
            update_critic(s, a, r, s2)
            update_actor(s)
            update_target(target_actor, actor_model, TAU)
            update_target(target_critic, critic_model, TAU)
        prev_state = state
    print(f"episode {episode}: reward {episodic_reward:.3f}")
