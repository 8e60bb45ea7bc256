package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * An open view pins its snapshot after the policy drops it — and that includes the snapshot's declaration: the
 * pre-state of a page first changed after the drop must still be recorded at the level the view reads, even when no
 * live snapshot is counted at that level any more. Before the fix the registry forgot the dropped declaration, the
 * capture skipped the view's level, and the next snapshot counted there recorded the page's later pre-state — which
 * the view then read as its own (a silently wrong past).
 */
@Timeout(120)
class DroppedViewCaptureTest {
    @TempDir
    Path dir;

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private VarveConfig config(Path path, RankTreePolicy policy) {
        return VarveConfig.builder().path(path).dataRegionSize(8L << 20).partitions(1).checkpointBufferSize(256L << 10)
                .captureBufferSize(256L << 10).archiveSegmentSize(256L << 10).retention(policy).walSegmentSize(4L << 20).build();
    }

    /** The budget drops the rank-2 snapshot the view reads as soon as a later one exists (it never drops the latest). */
    @Test
    void viewOfSnapshotDroppedByBudgetKeepsItsPast() {
        check(config(dir.resolve("budget"), RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll()).withBudget(1)), false);
    }

    /** Both levels' keepFor drop it; the sleep only ages it past the rule. */
    @Test
    void viewOfSnapshotDroppedByAgeKeepsItsPast() throws InterruptedException {
        check(config(dir.resolve("age"), RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(100)), Retention.keepFor(Duration.ofMillis(100)))), true);
    }

    private void check(VarveConfig cfg, boolean age) {
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("t");
            t.put(b("k"), b("v0"));
            t.put(b("j"), b("w0"));
            long s = store.snapshotNow(2);
            try (SnapshotView view = store.asOf(s)) {
                assertArrayEquals(b("w0"), view.table("t").get(b("j")));
                if (age) {
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                }
                store.snapshotNow(1); // the policy drops s here; the open view still pins it
                assertThrows(SnapshotNotFoundException.class, () -> store.asOf(s).close());
                t.put(b("k"), b("v1")); // the first change after s: its pre-state v0 is what the view must read
                store.snapshotNow(2);
                t.put(b("k"), b("v2")); // pre-state v1, captured for the new rank-2 snapshot
                store.checkpoint().join();
                assertArrayEquals(b("v0"), view.table("t").get(b("k")));
                try (Cursor c = view.table("t").scan(null, null)) {
                    c.next();
                    assertArrayEquals(b("j"), c.key());
                    c.next();
                    assertArrayEquals(b("k"), c.key());
                    assertArrayEquals(b("v0"), c.value());
                }
            }
        }
    }
}
