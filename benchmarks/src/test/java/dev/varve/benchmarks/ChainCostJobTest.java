package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code --chain-cost}: its flag, its table's ratios, and a shrunken run of every bound. */
@Timeout(180)
class ChainCostJobTest {
    @Test
    void theFlagSelectsTheJob() throws Exception {
        assertEquals(Options.Job.CHAIN_COST, Options.parse(List.of("--chain-cost")).job);
        assertTrue(Options.USAGE.contains("--chain-cost"));
    }

    /** Each round's first-pass p99 is set against the whole-page row of that round, and the table shows their range. */
    @Test
    void p99sAreAgainstTheWholePageRowOfTheSameRound() {
        List<ChainCostJob.Row> rows = List.of(row(0, 1, 10), row(7, 1, 25), row(0, 2, 20), row(7, 2, 30));
        String table = ChainCostJob.table(rows);
        String seven = table.lines().filter(l -> l.startsWith("7 ")).findFirst().orElseThrow();
        assertTrue(seven.contains("25.0-30.0"), seven); // the p99s of its rounds
        assertTrue(seven.contains("1.5x-2.5x"), seven); // 30 / 20 and 25 / 10
        assertTrue(table.lines().anyMatch(l -> l.startsWith("0 (whole pages) ") && l.contains("1.0x-1.0x")), table);
    }

    private static ChainCostJob.Row row(int bound, int round, double firstP99) {
        return new ChainCostJob.Row(bound, round, 1000, 1_000_000_000L, 1000L * SnapshotCostLoad.BATCH * SnapshotCostLoad.CHANGED_BYTES_PER_PUT,
                new GetLatency.Micros(1, 2, 3, firstP99));
    }

    /** Every bound, small: each row's gets are checked against the model, so a wrong as-of read fails the run. */
    @Test
    void everyBoundRunsAndTheReportHoldsTheTable(@TempDir Path tmp) throws Exception {
        Options o = Options.parse(List.of("--chain-cost", "--dir", tmp.resolve("store").toString(), "--out", tmp.resolve("report").toString()));
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Path md = new ChainCostJob(o, new PrintStream(buf, true, StandardCharsets.UTF_8), new ChainCostJob.Scale(1_000, 64L << 20, 300, 200, 1)).run();
        String report = Files.readString(md);
        assertEquals(tmp.resolve("report").resolve(ChainCostJob.FILE).toAbsolutePath(), md);
        for (int bound : ChainCostJob.BOUNDS)
            assertTrue(report.lines().anyMatch(l -> l.startsWith(bound + " ")), "a row for chain " + bound + ":\n" + report);
        assertTrue(buf.toString(StandardCharsets.UTF_8).contains("round 0 (untimed)"), buf::toString);
        assertFalse(Files.exists(tmp.resolve("store")), "the job deletes its stores");
    }
}
