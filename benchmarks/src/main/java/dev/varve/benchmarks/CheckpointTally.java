package dev.varve.benchmarks;

import dev.varve.engine.CheckpointStats;
import dev.varve.engine.VarveMetrics;

/**
 * Sums the per-checkpoint breakdown ({@link VarveMetrics#lastCheckpoint()}) over a run. The store reports only the
 * last checkpoint, so a daemon thread samples it every {@value #SAMPLE_MILLIS} ms and adds each new one once; a
 * checkpoint that completes and is overtaken between two samples is counted in {@link Totals#missed()}.
 */
final class CheckpointTally implements AutoCloseable {
    static final long SAMPLE_MILLIS = 5;

    /** Sums over the checkpoints seen; times in nanoseconds. */
    record Totals(long checkpoints, long missed, long pages, long recoveryDataBytes, long recoveryDataNanos, long pageWriteNanos,
                  long fsyncNanos, long lockHoldNanos, long totalNanos) {
        static final Totals ZERO = new Totals(0, 0, 0, 0, 0, 0, 0, 0, 0);

        Totals plus(CheckpointStats s, long skipped) {
            return new Totals(checkpoints + 1, missed + skipped, pages + s.pages(), recoveryDataBytes + s.recoveryDataBytes(),
                    recoveryDataNanos + s.recoveryDataNanos(), pageWriteNanos + s.pageWriteNanos(), fsyncNanos + s.fsyncNanos(),
                    lockHoldNanos + s.lockHoldNanos(), totalNanos + s.totalNanos());
        }

        Totals minus(Totals o) {
            return new Totals(checkpoints - o.checkpoints, missed - o.missed, pages - o.pages, recoveryDataBytes - o.recoveryDataBytes,
                    recoveryDataNanos - o.recoveryDataNanos, pageWriteNanos - o.pageWriteNanos, fsyncNanos - o.fsyncNanos,
                    lockHoldNanos - o.lockHoldNanos, totalNanos - o.totalNanos);
        }

        /** Mean of {@code nanos} per checkpoint seen, in milliseconds; 0 when none was seen. */
        double avgMillis(long nanos) {
            return checkpoints == 0 ? 0 : nanos / 1e6 / checkpoints;
        }
    }

    private final VarveMetrics metrics;
    private final Thread sampler;
    private volatile boolean running = true;
    private volatile Totals totals = Totals.ZERO;
    private long lastId;

    CheckpointTally(VarveMetrics metrics) {
        this.metrics = metrics;
        this.lastId = metrics.lastCheckpoint().id(); // checkpoints before the tally started do not count
        this.sampler = new Thread(this::run, "checkpoint-tally");
        sampler.setDaemon(true);
        sampler.start();
    }

    /** The sums so far, including any checkpoint completed before this call. */
    synchronized Totals totals() {
        sample();
        return totals;
    }

    private void run() {
        while (running) {
            synchronized (this) {
                sample();
            }
            try {
                Thread.sleep(SAMPLE_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Called with the monitor held. */
    private void sample() {
        CheckpointStats s = metrics.lastCheckpoint();
        if (s.id() <= lastId) return;
        totals = totals.plus(s, s.id() - lastId - 1);
        lastId = s.id();
    }

    @Override
    public void close() {
        running = false;
        sampler.interrupt();
        try {
            sampler.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
