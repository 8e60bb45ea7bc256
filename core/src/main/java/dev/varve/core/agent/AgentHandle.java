package dev.varve.core.agent;

/**
 * The owner's side of a started {@link Agent}, whichever way it is stepped: by an {@link AgentRunner}'s thread, or by
 * hand through an {@link AgentInvoker}.
 */
public interface AgentHandle extends AutoCloseable {
    /** The agent's role name. */
    String roleName();

    /** There is new work: a runner's thread stops idling. An invoker does nothing; its stepper decides when to step. */
    void wake();

    /**
     * The caller cannot go on until the agent has made progress (a full buffer, a checkpoint waiting for the archive).
     * A runner is woken and the caller parks briefly; an invoker takes one step on the caller's thread, so a store
     * stepped by hand never waits for a thread that does not exist. Call in a loop that rechecks its condition.
     */
    void awaitProgress();

    /** Ends the duty cycle, waits for the step in progress and {@link Agent#onClose}. Idempotent. */
    @Override
    void close();
}
