package dev.varve.core.agent;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;

/**
 * How a store runs its background agents, chosen once at open: {@link #dedicated()} gives each agent a thread of its
 * own (production), {@link #invoked()} gives none, and whoever holds this object steps them ({@link #invoker},
 * {@link #invokeAll}) — the store's deterministic test mode, after Aeron's invoker threading mode.
 *
 * <p>In invoked mode a caller that must wait for an agent steps it itself ({@link AgentHandle#awaitProgress}), so a
 * store driven from one test thread cannot wait for a thread that does not exist. The checkpoint's page writes,
 * spread over {@code checkpointThreads} threads in production, run on the thread that steps the checkpointer
 * ({@link #parallel()} is false).
 */
public final class Agents {
    private final boolean invoked;
    /** Makes the agents' threads when they are dedicated. */
    private final ThreadFactory threads;
    private final List<AgentInvoker> invokers = new ArrayList<>(); // this

    private Agents(boolean invoked, ThreadFactory threads) {
        this.invoked = invoked;
        this.threads = threads;
    }

    /** Every agent on a thread of its own. */
    public static Agents dedicated() {
        return dedicated(Thread::new);
    }

    /**
     * Every agent on a thread {@code threads} makes: the test seam for a thread the OS refuses to start
     * ({@code OutOfMemoryError: unable to create native thread}), which fails the open that starts it.
     */
    public static Agents dedicated(ThreadFactory threads) {
        if (threads == null) throw new IllegalArgumentException("threads must not be null");
        return new Agents(false, threads);
    }

    /** No agent threads: the holder steps the agents by hand. */
    public static Agents invoked() {
        return new Agents(true, null);
    }

    /** False in invoked mode: work a component would spread over threads runs on the calling thread instead. */
    public boolean parallel() {
        return !invoked;
    }

    /**
     * Starts {@code agent}: on a new thread idling up to {@code idlePeriod} between steps that found no work, or, in
     * invoked mode, registered for stepping by hand (the idle period is then unused).
     */
    public AgentHandle start(Agent agent, Duration idlePeriod) {
        IdleStrategy idle = IdleStrategy.parking(idlePeriod);
        if (!invoked) {
            AgentRunner r = new AgentRunner(agent, idle, threads);
            r.start();
            return r;
        }
        AgentInvoker i = new AgentInvoker(agent);
        i.start();
        synchronized (this) {
            invokers.add(i);
        }
        return i;
    }

    /**
     * The invoker of the agent named {@code roleName} started last (a store reopened on the same {@code Agents}
     * starts its agents again).
     *
     * @throws IllegalStateException in dedicated mode, or when no such agent was started
     */
    public synchronized AgentInvoker invoker(String roleName) {
        if (!invoked) throw new IllegalStateException("agents run on their own threads: there is nothing to step by hand");
        for (int i = invokers.size() - 1; i >= 0; i--) if (invokers.get(i).roleName().equals(roleName)) return invokers.get(i);
        throw new IllegalStateException("no agent named " + roleName + " was started; started: " + roleNames());
    }

    /** One step of every open agent, in the order they were started; the total work count. */
    public int invokeAll() {
        List<AgentInvoker> open;
        synchronized (this) {
            if (!invoked) throw new IllegalStateException("agents run on their own threads: there is nothing to step by hand");
            open = new ArrayList<>(invokers);
        }
        int work = 0;
        for (AgentInvoker i : open) work += i.invoke();
        return work;
    }

    private List<String> roleNames() {
        List<String> names = new ArrayList<>();
        for (AgentInvoker i : invokers) names.add(i.roleName());
        return names;
    }
}
