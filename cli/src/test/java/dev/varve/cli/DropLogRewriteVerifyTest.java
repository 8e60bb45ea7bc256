package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.engine.SnapshotNotFoundException;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A drop log that recovery rewrites — drops made after the checkpoint mark are left out (replay decides them again)
 * while a drop of a snapshot declared before the mark, made after them, is kept — and whose last entry a crash left
 * torn: open reads the whole entries and rewrites the log from them, so {@code varve verify} must name the torn bytes
 * as the tail open cuts, not as damage.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DropLogRewriteVerifyTest {
    @TempDir
    Path tmp;

    /** The real file system, except that once armed the rename of a checkpoint's start marker halts the JVM. */
    private static final class HaltAtStartMarker extends ForwardingFileIOFactory {
        volatile boolean armed;

        @Override
        public void atomicMove(Path from, Path to) throws IOException {
            if (armed && to.getFileName().toString().endsWith("-start.bin")) Runtime.getRuntime().halt(CliVerifyAgreesWithOpenTest.HALTED);
            delegate.atomicMove(from, to);
        }
    }

    static VarveConfig config(Path dir) {
        return VarveConfig.builder().path(dir).dataRegionSize(32L << 20).checkpointBufferSize(4L << 20).captureBufferSize(4L << 20)
                .walSegmentSize(4L << 20).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(1), Retention.keepLast(1))).build();
    }

    /**
     * The child: snapshot A of rank 2, a checkpoint (the mark recovery will use), then B and C of rank 1 and D of
     * rank 2 — C drops B, D drops C (both declared after the mark: left out by recovery) and A (kept) — then a
     * checkpoint that makes the archive durable, drop log included, and halts before its start marker.
     */
    public static void main(String[] args) {
        HaltAtStartMarker io = new HaltAtStartMarker();
        Varve store = Varve.open(config(Path.of(args[0])), io);
        int[] ranks = {2, 0, 1, 1, 2};
        for (int i = 0; i < ranks.length; i++) {
            store.table("t").put(("key-" + i).getBytes(StandardCharsets.UTF_8), ("value-" + i).getBytes(StandardCharsets.UTF_8));
            if (ranks[i] == 0) store.checkpoint().join();
            else store.snapshotNow(ranks[i]);
        }
        io.armed = true;
        store.checkpoint().join();
        throw new IllegalStateException("the checkpoint finished without writing its start marker");
    }

    @Test
    void aTornTailOfADropLogOpenRewritesIsTheTailOpenCuts() throws Exception {
        Path store = CliVerifyAgreesWithOpenTest.haltedStore(DropLogRewriteVerifyTest.class, tmp.resolve("store"));
        Path drops = store.resolve("archive/drops.log");
        long whole = Files.size(drops);
        Files.write(drops, new byte[] {7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, StandardOpenOption.APPEND); // part of a next entry

        CliRun r = CliRun.of("verify", "--json", store.toString());
        assertEquals(Main.OK, r.code(), r.toString());
        assertTrue(r.out().contains("{\"file\":\"" + drops + "\",\"from\":" + whole + ","), drops + " from " + whole + " is not named: " + r);
        try (Varve v = Varve.openReadOnly(StoreInspector.detectConfig(store))) { // open agrees
            assertEquals(1, v.snapshots().size(), v.snapshots().toString());
            long first = v.snapshots().get(0).id() - 3; // A, the first declared: its drop, made after the mark, was kept
            assertThrows(SnapshotNotFoundException.class, () -> v.asOf(first).close());
        }
    }
}
