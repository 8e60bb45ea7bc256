package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * I6, deterministic replay: a run that crashes after a checkpoint and replays the rest of the WAL at reopen ends
 * with page files byte-identical, partition by partition, to those of the same workload run without a crash —
 * whether the opening thread replays alone ({@code recoveryThreads(1)}) or workers replay partitions in parallel.
 */
@Timeout(600)
class DeterministicReplayTest {
    @TempDir
    Path tmp;

    private static VarveConfig config(Path dir, RecoveryMode mode) {
        return config(dir, mode, 1);
    }

    private static VarveConfig config(Path dir, RecoveryMode mode, int recoveryThreads) {
        return VarveConfig.builder().path(dir).recoveryThreads(recoveryThreads).dataRegionSize(16L << 20).partitions(4).recoveryMode(mode)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20)
                .captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    private static void workload(Varve store, long from, long to) {
        DeterministicReplayTestSupport.workload(store, from, to);
    }

    static Stream<Arguments> modesAndRecoveryThreads() {
        return Stream.of(RecoveryMode.values()).flatMap(m -> Stream.of(Arguments.of(m, 1), Arguments.of(m, 4)));
    }

    @ParameterizedTest
    @MethodSource("modesAndRecoveryThreads")
    void replayAfterCrashReproducesThePageImagesOfAnUninterruptedRun(RecoveryMode mode, int recoveryThreads) throws Exception {
        Path straight = tmp.resolve("straight");
        try (Varve store = Varve.open(config(straight, mode))) {
            workload(store, 0, 1500);
            store.checkpoint().get();
            workload(store, 1500, 4000);
        }
        Path crashed = tmp.resolve("crashed");
        Varve store = Varve.open(config(crashed, mode));
        workload(store, 0, 1500);
        store.checkpoint().get();
        workload(store, 1500, 4000);
        store.halt(); // kill -9: pages after the checkpoint exist only in the (memory-mapped) WAL
        try (Varve reopened = Varve.open(config(crashed, mode, recoveryThreads))) {
            assertTrue(reopened.recoveryReport().replayedRecords() > 0, "the crash left records to replay");
            int expected = recoveryThreads > 1 ? Math.min(recoveryThreads, Runtime.getRuntime().availableProcessors()) : 1;
            assertEquals(expected < 2 ? 0 : expected, reopened.engine().replayWorkers, "threads that replayed partitions");
        }
        List<String> files = pageFiles(straight);
        assertEquals(files, pageFiles(crashed), "the same partitions exist");
        for (String f : files) {
            // the pages, not the header page: it names each store (its id) and the checkpoints that wrote the file
            byte[] a = Files.readAllBytes(straight.resolve("pages").resolve(f));
            byte[] b = Files.readAllBytes(crashed.resolve("pages").resolve(f));
            long at = a.length != b.length ? Math.min(a.length, b.length) : java.util.Arrays.mismatch(a, 4096, a.length, b, 4096, b.length);
            if (at >= 0 && a.length == b.length) at += 4096;
            assertEquals(-1L, at, f + " differs from the uninterrupted run at byte " + at + " (page " + (at / 4096 - 1) + ")");
        }
    }

    private static List<String> pageFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir.resolve("pages"))) {
            return s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }
}
