package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code --snapshot-cost}: its flags, and a shrunken run of every row (a smoke test; no figure is asserted). */
@Timeout(180)
class SnapshotCostJobTest {
    @Test
    void ratiosAreAgainstTheMedianOfTheSyncModesRowsWithoutSnapshots() {
        List<SnapshotCostJob.Row> rows = List.of(none(WalSyncMode.LOG_ONLY, SnapshotCostJob.Capture.DIFF, 300),
                none(WalSyncMode.LOG_ONLY, SnapshotCostJob.Capture.SHORT_CHAIN, 100), none(WalSyncMode.LOG_ONLY, SnapshotCostJob.Capture.WHOLE_PAGES, 200),
                none(WalSyncMode.FSYNC, SnapshotCostJob.Capture.DIFF, 7));
        assertEquals(200, SnapshotCostJob.noneBaseline(rows, WalSyncMode.LOG_ONLY), 1e-9, "the middle of 300, 100 and 200, whatever the capture");
        assertEquals(7, SnapshotCostJob.noneBaseline(rows, WalSyncMode.FSYNC), 1e-9);
    }

    private static SnapshotCostJob.Row none(WalSyncMode sync, SnapshotCostJob.Capture capture, long batchesInASecond) {
        return new SnapshotCostJob.Row(new SnapshotCostJob.Setup(SnapshotCadence.NONE, sync, capture), batchesInASecond, 1_000_000_000L, 0, 0, 0, 0, 0, 0,
                "0", null);
    }

    @Test
    void flagsSelectTheJobAndItsSeconds() throws Exception {
        Options d = Options.parse(List.of("--snapshot-cost"));
        assertEquals(Options.Job.SNAPSHOT_COST, d.job);
        assertEquals(Options.SNAPSHOT_COST_SECONDS_DEFAULT, d.snapshotCostSeconds());
        assertEquals(3, Options.parse(List.of("--snapshot-cost", "--seconds", "3")).snapshotCostSeconds());
        Options.UsageException e = assertThrows(Options.UsageException.class, () -> Options.parse(List.of("--snapshot-cost", "--retention")));
        assertTrue(e.getMessage().contains("--snapshot-cost"), e::getMessage);
        assertTrue(Options.USAGE.contains("--snapshot-cost"));
    }

    /** Every row of the sweep, small: a sweep run, so it runs with {@code -Plong} (about 30 s on 2 cores). */
    @Test
    @Tag("long")
    void everyRowRunsAndTheReportHoldsTheTable(@TempDir Path tmp) throws Exception {
        Options o = Options.parse(List.of("--snapshot-cost", "--dir", tmp.resolve("store").toString(), "--out", tmp.resolve("report").toString()));
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Path md = new SnapshotCostJob(o, new PrintStream(buf, true, StandardCharsets.UTF_8), new SnapshotCostJob.Scale(1_000, 64L << 20, 20, 100, 200)).run();
        String report = Files.readString(md);
        String printed = buf.toString(StandardCharsets.UTF_8);
        assertEquals(tmp.resolve("report").resolve(SnapshotCostJob.FILE).toAbsolutePath(), md);
        List<String> rows = report.lines().filter(l -> l.matches("^(none|after every batch|every \\d+ m?s) .*")).toList();
        assertEquals(SnapshotCadence.values().length * SnapshotCostJob.SYNC_MODES.length * SnapshotCostJob.Capture.values().length, rows.size(), report);
        for (String row : rows) {
            assertTrue(printed.contains(row), row);
            assertTrue(row.contains(WalSyncMode.LOG_ONLY.name()) || row.contains(WalSyncMode.FSYNC.name()), row);
        }
        assertTrue(rows.stream().anyMatch(r -> r.contains("whole pages")), report);
        for (WalSyncMode sync : SnapshotCostJob.SYNC_MODES) // each ratio is against the median of the sync mode's 'none' rows, which is one of them
            assertTrue(rows.stream().filter(r -> r.startsWith("none ") && r.contains(" " + sync.name() + " ")).anyMatch(r -> r.contains(" 1.00x ")), report);
        assertTrue(printed.contains("JVM warm-up round 1: 7 untimed rows"), printed);
        assertTrue(rows.stream().filter(r -> r.startsWith("after every batch ")).allMatch(r -> r.matches(".*\\d+\\.\\d\\d / .*\\d+\\.\\d\\d / .*")), report);
        assertFalse(Files.exists(tmp.resolve("store")), "the job deletes its stores");
    }
}
