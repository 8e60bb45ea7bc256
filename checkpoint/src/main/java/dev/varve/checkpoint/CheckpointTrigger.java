package dev.varve.checkpoint;

import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agent;
import dev.varve.core.agent.AgentHandle;
import dev.varve.core.agent.Agents;
import dev.varve.core.memory.PageMemory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The checkpointer's background agent: decides when a checkpoint is due — the period, the dirty-page ratio, WAL
 * volume since the last mark, memory pressure, or an explicit request — and runs it. Requests made while a
 * checkpoint runs are served by the next one, which starts after them. Between checks its runner idles up to
 * {@link #POLL}: the dirty-page and WAL-volume thresholds are polled, not signalled.
 */
final class CheckpointTrigger implements Agent {
    private static final Duration POLL = Duration.ofMillis(20);

    private final Checkpointer checkpointer;
    private final PageMemory memory;
    private final long periodNanos;
    private final long dirtyLimitPages;
    private final long walVolumeBytes;
    private final List<CompletableFuture<CheckpointStats>> waiters = new ArrayList<>();
    private volatile String wanted;
    private volatile boolean stopped;
    private volatile AgentHandle handle;
    private long nextNanos; // stepping thread only

    CheckpointTrigger(Checkpointer checkpointer, VarveConfig config, PageMemory memory) {
        this.checkpointer = checkpointer;
        this.memory = memory;
        this.periodNanos = config.checkpointFrequency().toNanos();
        this.dirtyLimitPages = (long) (memory.capacityPages() * config.checkpointDirtyRatio());
        this.walVolumeBytes = config.checkpointWalVolume();
    }

    synchronized void start(Agents agents) {
        if (handle != null || stopped) return;
        wanted = null; // wake-ups during recovery were served by its own checkpoints, the last one just now
        nextNanos = System.nanoTime() + periodNanos;
        handle = agents.start(this, POLL);
    }

    @Override
    public String roleName() {
        return "checkpointer";
    }

    /** Wakes the agent with a reason; cheap enough to call from a waiting writer's loop. */
    void wake(String reason) {
        if (wanted == null) wanted = reason;
        AgentHandle h = handle;
        if (h != null) h.wake();
    }

    CompletableFuture<CheckpointStats> request(String reason) {
        CompletableFuture<CheckpointStats> f = new CompletableFuture<>();
        synchronized (this) {
            if (stopped) {
                f.completeExceptionally(new IllegalStateException("the checkpointer is closed"));
                return f;
            }
            waiters.add(f);
        }
        wake(reason);
        return f;
    }

    /** Runs one checkpoint if one is due, serving every request made before it; 1 if it ran, else 0. */
    @Override
    public int doWork() {
        String reason = dueReason();
        if (reason == null) return 0;
        wanted = null;
        List<CompletableFuture<CheckpointStats>> served;
        synchronized (this) {
            served = new ArrayList<>(waiters);
            waiters.clear();
        }
        try {
            CheckpointStats s = checkpointer.checkpoint(reason);
            served.forEach(f -> f.complete(s));
        } catch (Throwable t) {
            served.forEach(f -> f.completeExceptionally(t));
            throw t;
        }
        nextNanos = System.nanoTime() + periodNanos;
        return 1;
    }

    /** Why a checkpoint is due now, or null. */
    private String dueReason() {
        String reason = wanted;
        if (reason != null) return reason;
        if (System.nanoTime() - nextNanos >= 0) return "timer";
        if (memory.heldPages() >= dirtyLimitPages) return "dirty pages";
        if (checkpointer.walBytesSinceMark() >= walVolumeBytes) return "wal volume";
        return null;
    }

    /** A failed checkpoint ends the agent: later requests fail with its cause. */
    @Override
    public void onError(Throwable failure) {
        failWaiters(failure);
    }

    @Override
    public void onClose() {
        failWaiters(new IllegalStateException("the checkpointer is closed"));
    }

    private synchronized void failWaiters(Throwable t) {
        stopped = true;
        waiters.forEach(f -> f.completeExceptionally(t));
        waiters.clear();
    }

    /** Stops the agent after the checkpoint in progress; pending requests fail. */
    void close() {
        AgentHandle h;
        synchronized (this) {
            stopped = true;
            h = handle;
        }
        if (h != null) h.close();
        failWaiters(new IllegalStateException("the checkpointer is closed"));
    }
}
