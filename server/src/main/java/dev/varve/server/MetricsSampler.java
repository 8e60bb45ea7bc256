package dev.varve.server;

import dev.varve.engine.CheckpointStats;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Samples the store's metrics on one thread at a fixed interval into two bounded rings: the recent samples (for
 * charts over time) and the recent checkpoints (each seen once, by its id changing). The archive's dead-byte count,
 * which reads every archived record's header, is measured at a much lower rate and cached.
 *
 * <p>Samples are stamped with the wall clock as read at start plus the monotonic time since: the dashboard draws its
 * charts against those times and divides by their differences, and the wall clock read at each sample, stepped back an
 * hour (NTP), put samples out of order — the charts folded onto one edge and a rate was shown as a whole sample's
 * count — or, stepped forward a day, squeezed every earlier sample to one side.
 */
final class MetricsSampler implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetricsSampler.class);
    /** {@link #archiveDeadBytes} when its measurement failed. */
    static final long UNKNOWN = -1;

    /** One sample of the store's counters. */
    record Sample(long millis, long writes, long walBytes, long archiveBytes, long[] archiveBytesPerLevel, long dirtyPages,
                  long copyOnWritePages, long throttledNanos, long checkpointBufferUsedPages, long checkpoints) {
    }

    /** A checkpoint and when the sampler first saw it. */
    record SeenCheckpoint(long seenMillis, CheckpointStats stats) {
    }

    private final Varve store;
    private final int sampleCapacity;
    private final int checkpointCapacity;
    private final long deadBytesIntervalNanos;
    private final ArrayDeque<Sample> samples = new ArrayDeque<>();
    private final ArrayDeque<SeenCheckpoint> checkpoints = new ArrayDeque<>();
    private final ScheduledExecutorService thread;
    private long lastCheckpointId = -1;
    private final Object deadBytesLock = new Object(); // apart from the rings: a measurement may take a while
    private boolean deadBytesMeasured;
    private long deadBytes;
    private long deadBytesAt;
    /** The monotonic clock (nanoseconds); and the wall clock and it when the sampler started. */
    private final LongSupplier nanoClock;
    private final long startMillis;
    private final long startNanos;

    MetricsSampler(Varve store, ServerOptions options) {
        this(store, options, System::currentTimeMillis, System::nanoTime);
    }

    /** With the clocks given ({@code wallClock} read once, at start), for tests. */
    MetricsSampler(Varve store, ServerOptions options, LongSupplier wallClock, LongSupplier nanoClock) {
        this.store = store;
        this.nanoClock = nanoClock;
        this.startNanos = nanoClock.getAsLong();
        this.startMillis = wallClock.getAsLong();
        this.sampleCapacity = options.sampleHistory();
        this.checkpointCapacity = options.checkpointHistory();
        this.deadBytesIntervalNanos = options.deadBytesInterval().toNanos();
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "varve-server-sampler");
            t.setDaemon(true);
            return t;
        });
        sample();
        long every = options.sampleInterval().toMillis();
        thread.scheduleWithFixedDelay(this::sampleQuietly, every, every, TimeUnit.MILLISECONDS);
    }

    private void sampleQuietly() {
        try {
            sample();
        } catch (IllegalStateException closed) {
            thread.shutdown(); // the store was closed under the server: nothing left to sample
        } catch (RuntimeException e) {
            LOG.warn("sampling the store's metrics failed", e);
        }
    }

    void sample() {
        VarveMetrics m = store.metrics();
        long now = startMillis + TimeUnit.NANOSECONDS.toMillis(nanoClock.getAsLong() - startNanos);
        Sample s = new Sample(now, m.writes(), m.walBytesWritten(), m.archiveBytes(), m.archiveBytesPerLevel(), m.dirtyPages(),
                m.copyOnWritePages(), m.throttledNanos(), m.checkpointBufferUsedPages(), m.checkpointsCompleted());
        CheckpointStats last = m.lastCheckpoint();
        synchronized (this) {
            add(samples, s, sampleCapacity);
            if (last.id() != lastCheckpointId && last.id() > 0) add(checkpoints, new SeenCheckpoint(now, last), checkpointCapacity);
            lastCheckpointId = last.id();
        }
    }

    private static <T> void add(ArrayDeque<T> ring, T item, int capacity) {
        if (ring.size() == capacity) ring.removeFirst();
        ring.addLast(item);
    }

    synchronized List<Sample> samples() {
        return new ArrayList<>(samples);
    }

    synchronized List<SeenCheckpoint> checkpoints() {
        return new ArrayList<>(checkpoints);
    }

    /**
     * The archive's dead bytes, measured again when the cached figure is older than the interval; {@link #UNKNOWN}
     * when the last measurement failed. It reads every archived record's header: a failing read must not take the
     * scrape (and every other figure, {@code varve_failed} included) down with it, and is not tried again before the
     * interval has passed, so a failing disk is not read through on every scrape.
     */
    long archiveDeadBytes() {
        synchronized (deadBytesLock) {
            long now = nanoClock.getAsLong();
            if (!deadBytesMeasured || now - deadBytesAt > deadBytesIntervalNanos) {
                try {
                    deadBytes = store.metrics().archiveDeadBytes();
                } catch (IllegalStateException closed) {
                    throw closed; // the store was closed: nothing is served (503)
                } catch (RuntimeException e) {
                    deadBytes = UNKNOWN;
                    LOG.warn("measuring the archive's dead bytes failed; reported as unknown until the next measurement", e);
                }
                deadBytesAt = now;
                deadBytesMeasured = true;
            }
            return deadBytes;
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
