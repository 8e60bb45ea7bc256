package dev.varve.core.agent;

/**
 * A unit of background work with a role: the archiver, the checkpoint trigger, the WAL flusher. An agent never owns
 * a thread or loops by itself; an {@link AgentRunner} steps it on a dedicated thread, or a test steps it by hand
 * through an {@link AgentInvoker}. Each {@link #doWork} does a bounded amount of work and says how much, so the
 * runner knows when to idle.
 *
 * <p>Lifecycle, on the thread that steps the agent: {@link #onStart} once, {@link #doWork} until closed or until it
 * throws, then {@link #onClose} once. A throw ends the duty cycle: {@link #onError} is told first. The agents of a
 * store hold state a half-done step leaves unknown (a partly archived batch, a failed checkpoint), so none of them
 * carries on after a failure; the component it belongs to reports the failure to its callers.
 */
public interface Agent {
    /** A short name for the role, e.g. {@code "archiver"}: the thread is named after it. */
    String roleName();

    /** Called once on the stepping thread before the first {@link #doWork}. */
    default void onStart() {
    }

    /**
     * One step of the duty cycle.
     *
     * @return how much work was done; 0 lets the runner idle until woken or its idle period ends
     */
    int doWork() throws Exception;

    /**
     * How long the runner may park after a step that did no work, given the agent's idle period: the period by
     * default. An agent that sees no work coming may ask for longer; whoever then gives it work must
     * {@link AgentHandle#wake} it.
     */
    default long idleNanos(long periodNanos) {
        return periodNanos;
    }

    /** Told of the failure that ended the duty cycle, before {@link #onClose}. */
    default void onError(Throwable failure) {
    }

    /** Called once at the end, on the stepping thread, also after a failure; the last chance to release waiters. */
    default void onClose() {
    }
}
