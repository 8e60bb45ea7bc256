package dev.varve.core.wal;

import dev.varve.core.agent.Agent;
import dev.varve.core.agent.AgentHandle;
import dev.varve.core.agent.Agents;

import java.time.Duration;

/**
 * The agent of {@link dev.varve.config.WalSyncMode#BACKGROUND}: forces the WAL every {@code flushFrequency}. Stops
 * at close, or at the first failure (the WAL has then refused further work and says why to every caller). Its runner
 * idles a whole period between forces, so it costs one wake-up per period.
 */
final class WalBackgroundFlusher implements Agent, AutoCloseable {
    private final Wal wal;
    private final Duration period;
    private long nextForceNanos; // stepping thread only
    private AgentHandle handle;

    WalBackgroundFlusher(Wal wal, Duration flushFrequency) {
        this.wal = wal;
        this.period = flushFrequency;
    }

    /** Starts stepping, the first force one period from now. */
    void start(Agents agents) {
        nextForceNanos = System.nanoTime() + period.toNanos();
        handle = agents.start(this, period);
    }

    @Override
    public String roleName() {
        return "wal-flusher";
    }

    /** Forces the WAL once a period has passed since the last force; a failure ends the agent. */
    @Override
    public int doWork() {
        long now = System.nanoTime();
        if (now - nextForceNanos < 0) return 0;
        wal.force();
        nextForceNanos = System.nanoTime() + period.toNanos();
        return 1;
    }

    /** Stops stepping and waits for the thread (a force in progress completes first). */
    @Override
    public void close() {
        if (handle != null) handle.close();
    }
}
