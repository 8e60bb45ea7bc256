package dev.varve.checkpoint;

import dev.varve.config.VarveConfig;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.util.StoreThreads;
import dev.varve.core.wal.Wal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The checkpointer's background agent: decides when a checkpoint is due — the period, the dirty-page ratio, WAL
 * volume since the last mark, memory pressure, or an explicit request — and runs it. Requests made while a
 * checkpoint runs are served by the next one, which starts after them.
 */
final class CheckpointTrigger {
    private static final Logger LOG = LoggerFactory.getLogger(CheckpointTrigger.class);
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final Checkpointer checkpointer;
    private final PageMemory memory;
    private final long periodNanos;
    private final long dirtyLimitPages;
    private final long walVolumeBytes;
    private final List<CompletableFuture<CheckpointStats>> waiters = new ArrayList<>();
    private volatile String wanted;
    private volatile boolean stopped;
    private Thread thread;

    CheckpointTrigger(Checkpointer checkpointer, VarveConfig config, PageMemory memory, Wal wal) {
        this.checkpointer = checkpointer;
        this.memory = memory;
        this.periodNanos = config.checkpointFrequency().toNanos();
        this.dirtyLimitPages = (long) (memory.capacityPages() * config.checkpointDirtyRatio());
        this.walVolumeBytes = config.checkpointWalVolume();
    }

    synchronized void start() {
        if (thread != null) return;
        wanted = null; // wake-ups during recovery were served by its own checkpoints, the last one just now
        thread = new Thread(this::loop, "varve-checkpointer" + StoreThreads.suffix());
        thread.setDaemon(true);
        thread.start();
    }

    /** Wakes the agent with a reason; cheap enough to call from a waiting writer's loop. */
    void wake(String reason) {
        if (wanted == null) wanted = reason;
        Thread t = thread;
        if (t != null) LockSupport.unpark(t);
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

    private void loop() {
        long next = System.nanoTime() + periodNanos;
        while (!stopped) {
            long now = System.nanoTime();
            String reason = wanted;
            if (reason == null) {
                if (now - next >= 0) reason = "timer";
                else if (memory.heldPages() >= dirtyLimitPages) reason = "dirty pages";
                else if (checkpointer.walBytesSinceMark() >= walVolumeBytes) reason = "wal volume";
            }
            if (reason == null) {
                LockSupport.parkNanos(this, Math.min(POLL_NANOS, next - now));
                continue;
            }
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
                LOG.error("checkpointer stops after a failed checkpoint", t);
                failWaiters(t);
                return;
            }
            next = System.nanoTime() + periodNanos;
        }
    }

    private synchronized void failWaiters(Throwable t) {
        stopped = true;
        waiters.forEach(f -> f.completeExceptionally(t));
        waiters.clear();
    }

    void close() {
        Thread t;
        synchronized (this) {
            stopped = true;
            t = thread;
        }
        if (t != null) {
            LockSupport.unpark(t);
            try {
                t.join(TimeUnit.MINUTES.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        failWaiters(new IllegalStateException("the checkpointer is closed"));
    }
}
