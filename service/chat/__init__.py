"""The chat: pipeline, agent, prompts, scenarios."""
