package dev.varve.core.agent;

/**
 * Steps one {@link Agent} by hand, on the caller's thread: the mode in which tests drive the store's background work
 * deterministically instead of sleeping until a thread got round to it. {@link #invoke} is one step of the duty
 * cycle; steps are serialised, so an agent never runs on two threads at once even when a waiting writer
 * ({@link #awaitProgress}) and the test step it together. A failing step ends the agent as on a runner's thread
 * ({@link Agent#onError}, then {@link Agent#onClose}) and is rethrown to the stepper.
 */
public final class AgentInvoker implements AgentHandle {
    private final Agent agent;
    private boolean started; // this
    private boolean closed; // this

    public AgentInvoker(Agent agent) {
        if (agent == null) throw new IllegalArgumentException("agent must not be null");
        this.agent = agent;
    }

    /** Runs {@link Agent#onStart}; once. */
    public synchronized void start() {
        if (started) throw new IllegalStateException("agent " + agent.roleName() + " was started already");
        started = true;
        if (!closed) agent.onStart();
    }

    /**
     * One step of the agent's duty cycle on this thread.
     *
     * @return the work count of the step; 0 when nothing was due, or when the agent is not started or closed
     * @throws RuntimeException the step's failure, after the agent was closed by it
     */
    public synchronized int invoke() {
        if (!started || closed) return 0;
        try {
            return agent.doWork();
        } catch (Throwable t) {
            agent.onError(t);
            close();
            if (t instanceof RuntimeException r) throw r;
            if (t instanceof Error e) throw e;
            throw new IllegalStateException("agent " + agent.roleName() + " failed: " + t, t);
        }
    }

    /** True once closed, by {@link #close} or by a failed step. */
    public synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public String roleName() {
        return agent.roleName();
    }

    @Override
    public void wake() {
        // the stepper decides when to step
    }

    /**
     * One step on the waiting caller's thread. A failure of that step is not the caller's to handle: the agent's
     * {@link Agent#onError} reported it to its owner, whose wait loop then refuses with the cause.
     */
    @Override
    public void awaitProgress() {
        try {
            invoke();
        } catch (RuntimeException reportedByTheAgent) {
            // closed and reported; the caller's loop rechecks its owner's state
        }
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        agent.onClose();
    }
}
