package dev.varve.core.agent;

import dev.varve.core.util.StoreThreads;
import dev.varve.core.util.ThreadEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Steps one {@link Agent} on a daemon thread of its own, named {@code varve-<role>} plus the store's name
 * ({@link StoreThreads}): {@link Agent#doWork} in a loop, idling per its {@link IdleStrategy} when a step found
 * nothing to do, until {@link #close} or the first failure.
 *
 * <p>Close waits for the step in progress: a checkpoint under way completes (or fails) before the store closes the
 * files it writes. The wait is bounded by {@link #CLOSE_WAIT_NANOS} so that a stuck disk cannot hang close forever;
 * a runner still busy then is logged and left behind (it is a daemon).
 */
public final class AgentRunner implements AgentHandle {
    private static final Logger LOG = LoggerFactory.getLogger(AgentRunner.class);
    /** Longest wait in {@link #close} for the step in progress: a full checkpoint of a large region. */
    static final long CLOSE_WAIT_NANOS = TimeUnit.MINUTES.toNanos(5);
    /** How long {@link #awaitProgress} parks the caller after waking the agent. */
    private static final long PROGRESS_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(20);

    private final Agent agent;
    private final IdleStrategy idle;
    private final Thread thread;
    private volatile boolean running = true;
    private boolean started; // this
    private boolean closed; // this

    /** A runner for {@code agent}; its thread is created now, so it carries the opening store's name. */
    public AgentRunner(Agent agent, IdleStrategy idle) {
        this(agent, idle, Thread::new);
    }

    /** As above, its thread made by {@code threads}. */
    public AgentRunner(Agent agent, IdleStrategy idle, ThreadFactory threads) {
        if (agent == null) throw new IllegalArgumentException("agent must not be null");
        if (idle == null) throw new IllegalArgumentException("idle strategy must not be null");
        this.agent = agent;
        this.idle = idle;
        this.thread = threads.newThread(this::run);
        thread.setName("varve-" + agent.roleName() + StoreThreads.suffix());
        thread.setDaemon(true);
    }

    /**
     * Starts the thread; once. A thread the OS refuses (unable to create native thread) leaves the runner not
     * started, so that close still closes the agent, whose own thread never will.
     */
    public synchronized void start() {
        if (started || closed) throw new IllegalStateException("agent " + agent.roleName() + (closed ? " was closed" : " was started already"));
        thread.start();
        started = true;
    }

    private void run() {
        try {
            agent.onStart();
            while (running) idle.idle(agent.doWork(), agent, this);
        } catch (Throwable t) {
            running = false;
            LOG.error("agent {} stops after a failure", agent.roleName(), t);
            agent.onError(t);
        } finally {
            agent.onClose();
        }
    }

    @Override
    public String roleName() {
        return agent.roleName();
    }

    @Override
    public void wake() {
        LockSupport.unpark(thread);
    }

    @Override
    public void awaitProgress() {
        LockSupport.unpark(thread);
        LockSupport.parkNanos(this, PROGRESS_PARK_NANOS);
    }

    /** True until the duty cycle ended (closed, or failed). */
    public boolean isRunning() {
        return running && thread.isAlive();
    }

    @Override
    public void close() {
        boolean wasStarted;
        synchronized (this) {
            if (closed) return;
            closed = true;
            running = false;
            wasStarted = started;
        }
        if (!wasStarted) {
            agent.onClose();
            return;
        }
        if (Thread.currentThread() == thread) return; // the agent closes itself: its loop ends after this step
        LockSupport.unpark(thread);
        if (!ThreadEnd.await(thread, System.nanoTime() + CLOSE_WAIT_NANOS)) // an interrupted closer waits all the same
            LOG.warn("agent {} did not stop within {} s; left running", agent.roleName(), TimeUnit.NANOSECONDS.toSeconds(CLOSE_WAIT_NANOS));
    }
}
