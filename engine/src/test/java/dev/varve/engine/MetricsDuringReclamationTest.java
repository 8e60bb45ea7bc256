package dev.varve.engine;

import dev.varve.core.io.UnforcedFileIOFactory;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The archive's dead-bytes figure ({@code metrics().archiveDeadBytes()}, the MXBean's ArchiveDeadBytes) is read while
 * retention reclaims Pagelog segments: the walk over the segments' record headers ran without the Pagelog's monitor
 * while reclamation closed and removed them, and failed with "cannot read a Pagelog record header"
 * (ClosedChannelException) or a NullPointerException.
 */
@Timeout(120)
class MetricsDuringReclamationTest {
    @TempDir
    Path dir;

    @Test
    void deadBytesCanBeReadWhileSegmentsAreReclaimed() throws Exception {
        VarveConfig config = FixtureSupport.small(dir).dataRegionSize(16L << 20).archiveSegmentSize(256L << 10)
                .checkpointFrequency(Duration.ofMillis(20)).retention(RankTreePolicy.levels(Retention.keepLast(1))).build();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailed = new AtomicReference<>();
        long calls = 0;
        try (Varve store = Varve.open(config, UnforcedFileIOFactory.INSTANCE)) {
            Table t = store.table("t");
            Thread writer = new Thread(() -> {
                byte[] v = new byte[200];
                try {
                    for (int i = 0; !stop.get(); i++) {
                        t.put(FixtureSupport.utf8("k" + (i % 3000)), v);
                        if (i % 50 == 0) store.snapshotNow();
                    }
                } catch (Throwable e) {
                    writerFailed.set(e);
                }
            }, "writer");
            writer.start();
            try {
                // until some hundreds of segments went while the figure was being read
                while (store.metrics().archiveBytesReclaimed() < (64L << 20) && writerFailed.get() == null) {
                    assertTrue(store.metrics().archiveDeadBytes() >= 0);
                    calls++;
                }
            } finally {
                stop.set(true);
                writer.join();
            }
        }
        if (writerFailed.get() != null) throw new AssertionError("the writer failed", writerFailed.get());
        assertTrue(calls > 0);
    }
}
