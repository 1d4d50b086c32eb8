"""An advantage actor-critic (A2C) agent trained eagerly, one episode per update, on a synthetic numpy cart-pole-like balancing task.

Pattern: Keras example "Actor Critic Method" (shared Dense trunk with softmax actor and value critic heads, one GradientTape around the whole episode, action_probs_history with tf.math.log, normalised discounted returns, Huber critic loss), no tf.function
Family: RL loops
Bug: the log-probability of the sampled action is taken with `np.log(...)` on the eager tensor, which yields a numpy value outside the tape: the actor head gets a None gradient (Keras warns and skips it); the trunk and critic still train
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--episodes", type=int, default=4)
args = parser.parse_args()

GAMMA, MAX_STEPS, NUM_ACTIONS = 0.99, 40, 2
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
eps = np.finfo(np.float32).eps.item()


class BalanceEnv:
    """Linearised inverted pendulum: state (angle, angular velocity, position, velocity)."""

    def reset(self):
        self.state = rng.uniform(-0.05, 0.05, size=4)
        return self.state.astype("float32")

    def step(self, action):
        theta, omega, x, v = self.state
        force = 1.0 if action == 1 else -1.0
        omega += 0.02 * (9.8 * theta - force)
        v += 0.02 * force
        self.state = np.array([theta + 0.02 * omega, omega, x + 0.02 * v, v])
        done = abs(self.state[0]) > 0.2 or abs(self.state[2]) > 2.4
        return self.state.astype("float32"), 1.0, done


inputs = tf.keras.layers.Input(shape=(4,))
common = tf.keras.layers.Dense(64, activation="relu")(inputs)
action = tf.keras.layers.Dense(NUM_ACTIONS, activation="softmax")(common)
critic = tf.keras.layers.Dense(1)(common)
model = tf.keras.Model(inputs=inputs, outputs=[action, critic])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
huber_loss = tf.keras.losses.Huber()
env = BalanceEnv()

for episode in range(args.episodes):
    state = env.reset()
    action_probs_history, critic_value_history, rewards_history = [], [], []
    with tf.GradientTape() as tape:
        for _ in range(MAX_STEPS):
            state = tf.expand_dims(tf.convert_to_tensor(state), 0)
            action_probs, critic_value = model(state)
            critic_value_history.append(critic_value[0, 0])
            action = rng.choice(NUM_ACTIONS, p=np.squeeze(action_probs))
            log_prob = np.log(action_probs[0, action]) if args.bug else tf.math.log(action_probs[0, action])
            action_probs_history.append(log_prob)
            state, reward, done = env.step(action)
            rewards_history.append(reward)
            if done:
                break
        returns, discounted_sum = [], 0
        for r in rewards_history[::-1]:
            discounted_sum = r + GAMMA * discounted_sum
            returns.insert(0, discounted_sum)
        returns = np.array(returns)
        returns = ((returns - np.mean(returns)) / (np.std(returns) + eps)).tolist()
        actor_losses, critic_losses = [], []
        for log_prob, value, ret in zip(action_probs_history, critic_value_history, returns):
            diff = ret - value
            actor_losses.append(-log_prob * diff)
            critic_losses.append(huber_loss(tf.expand_dims(value, 0), tf.expand_dims(ret, 0)))
        loss_value = sum(actor_losses) + sum(critic_losses)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print(f"episode {episode}: {len(rewards_history)} steps, loss {float(loss_value):.4f}")
