package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FaultyFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A power cut at every file operation of a checkpoint that compacts the archive's logs, in a real store (from a
 * black-box review of the compaction): the snapshot log's compaction, the drop log's, and a two-level policy with lazy
 * ranking and rank changes (its joins, moves and ranked extents too). After each cut (strict directory entries) the
 * store recovers the same snapshots, reading right, stays so through another checkpoint and a reopen, and a read-only
 * open changes no file. The default suite cuts at every third operation; {@code -Dvarve.cutStride=1} at every one.
 */
@Timeout(1200)
class LogCompactionPowerCutTest {
    static final int KEEP = 8;
    /** Cut at operation 1, 1 + STRIDE, ...: every operation with 1. */
    private static final int STRIDE = Integer.getInteger("varve.cutStride", 3);
    @TempDir
    Path tmp;

    static VarveConfig config(Path dir) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).skippyNodeEntries(16)
                .archiveSegmentSize(256L << 10).snapshotPageWindow(0)
                .retention(RankTreePolicy.levels(Retention.keepLast(KEEP))).walSegmentSize(4L << 20).build();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static void step(Varve s, long i) {
        long id = s.writeAndSnapshot(b -> b.put("t", utf8("k" + (i % 40)), utf8("v" + i)), 1);
        assertEquals(i, id);
    }

    static Map<String, String> hashes(Path dir) throws Exception {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.filter(Files::isRegularFile).toList()) {
                out.put(dir.relativize(p).toString(), java.util.HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
            }
        }
        return out;
    }

    static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path p : files.toList()) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(t);
                else Files.copy(p, t);
            }
        }
    }

    static void check(Varve s, long latest, String where) {
        List<Long> ids = new ArrayList<>();
        for (SnapshotInfo i : s.snapshots()) ids.add(i.id());
        List<Long> want = new ArrayList<>();
        for (long id = latest - KEEP + 1; id <= latest; id++) want.add(id);
        assertEquals(want, ids, where);
        for (long id : ids) {
            try (SnapshotView v = s.asOf(id)) {
                assertArrayEquals(utf8("v" + id), v.table("t").get(utf8("k" + (id % 40))), where + " snapshot " + id);
            }
        }
        assertFalse(s.droppedSnapshots(3).isEmpty(), where);
        assertThrows(SnapshotNotFoundException.class, () -> s.asOf(1), where);
        assertEquals(List.of(), s.danglingArchiveMappings(), where);
    }

    /**
     * Copies {@code base} to {@code d}, opens it through a power-cut model that crashes at the {@code k}-th operation
     * {@code ops} matches, runs a checkpoint with the store's agents stepped by hand and halts the store. Returns the
     * model: {@code crashedAt()} is null when the checkpoint completed first, after {@code ifCompleted} saw the store.
     */
    private static FaultyFileIOFactory checkpointCutAt(Path base, Path d, Function<Path, VarveConfig> config, long seed, int k,
                                                       Predicate<FaultyFileIOFactory.Op> ops, Consumer<Varve> ifCompleted) throws IOException {
        copy(base, d);
        FaultyFileIOFactory io = new FaultyFileIOFactory(seed);
        io.strictDirectoryEntries(true);
        Agents stepped = Agents.invoked();
        Varve s = Varve.open(config.apply(d), io, stepped);
        io.crashAt(FaultyFileIOFactory.nth(k, op -> op.path() != null && ops.test(op)));
        CompletableFuture<?> cp = s.checkpoint();
        try {
            while (!cp.isDone()) stepped.invokeAll();
        } catch (RuntimeException e) {
            if (io.crashedAt() == null) throw e;
        }
        if (io.crashedAt() == null) ifCompleted.accept(s);
        s.halt();
        return io;
    }

    @ParameterizedTest
    @ValueSource(longs = {4500, 8500})
    void powerCutAtEveryArchiveOpOfACompactingCheckpoint(long BUILT) throws Exception {
        Path base = tmp.resolve("base");
        Varve b = Varve.open(config(base));
        for (long i = 1; i <= BUILT; i++) {
            step(b, i);
            if (i % 1000 == 0) b.checkpoint().get(60, TimeUnit.SECONDS);
        }
        b.halt(); // replay 4001..4500 at open; the next checkpoint compacts (4500 records >= 4096)
        int crashes = 0;
        List<String> where = new ArrayList<>();
        for (int k = 1; k < 2000; k += STRIDE) {
            Path d = tmp.resolve("cut-" + k);
            FaultyFileIOFactory io = checkpointCutAt(base, d, LogCompactionPowerCutTest::config, 77 + k, k,
                    op -> op.names("snapshots.log") || op.names("drops.log") || op.names("archive-marks"), s -> { });
            if (io.crashedAt() == null) {
                try (var files = Files.list(d.resolve("archive"))) {
                    assertTrue(files.anyMatch(p -> p.getFileName().toString().startsWith("drops.log")), "ran");
                }
                break;
            }
            crashes++;
            String at = String.valueOf(io.crashedAt());
            where.add(at);
            io.powerLoss();
            Map<String, String> before = hashes(d);
            try (Varve ro = Varve.openReadOnly(config(d))) {
                check(ro, BUILT, "read-only after cut at " + at);
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("read-only after cut at " + at + ": " + e, e);
            }
            assertEquals(before, hashes(d), "read-only open changed files, cut at " + at);
            try (Varve r = Varve.open(config(d))) {
                check(r, BUILT, "after cut at " + at);
                step(r, BUILT + 1);
                r.checkpoint().get(60, TimeUnit.SECONDS);
                check(r, BUILT + 1, "after cut at " + at + " and a checkpoint");
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("cut at " + at + ": " + e, e);
            }
            try (Varve r = Varve.open(config(d))) {
                check(r, BUILT + 1, "reopen after cut at " + at);
            }
            deleteTree(d);
        }
        assertTrue(crashes * STRIDE > 10, "crashes " + crashes);
    }

    static void deleteTree(Path d) throws IOException {
        try (Stream<Path> files = Files.walk(d)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }

    static VarveConfig levelsConfig(Path dir) {
        return config(dir).toBuilder().snapshotPageWindow(2).retention(RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3))).build();
    }


    @Test
    void powerCutAtEveryLogOpOfACompactingCheckpointWithRankChanges() throws Exception {
        Path base = tmp.resolve("base");
        long built = 3700;
        Varve b = Varve.open(levelsConfig(base));
        for (long i = 1; i <= built; i++) {
            step(b, i);
            long n = i;
            if (i % 7 == 0 && b.snapshots().stream().anyMatch(x -> x.id() == n - 1)) b.rank(n - 1, 2);
            if (i % 1000 == 0) b.checkpoint().get(60, TimeUnit.SECONDS);
        }
        List<String> want = LogCompactionRanksTest.state(b);
        b.halt();
        int crashes = 0;
        boolean compacted = false;
        for (int k = 1; k < 2000; k += STRIDE) {
            Path d = tmp.resolve("lcut-" + k);
            boolean[] compactedNow = {false};
            FaultyFileIOFactory io = checkpointCutAt(base, d, LogCompactionPowerCutTest::levelsConfig, 99 + k, k,
                    op -> op.names("snapshots.log") || op.names("drops.log") || op.names("archive-marks") || op.names("joins.log") || op.names("moves.log")
                            || op.names("extent-"), s -> compactedNow[0] = StoreInspector.droppedBefore(s).isPresent());
            if (io.crashedAt() == null) {
                compacted = compactedNow[0];
                break;
            }
            crashes++;
            String at = String.valueOf(io.crashedAt());
            io.powerLoss();
            try (Varve r = Varve.open(levelsConfig(d))) {
                assertEquals(want, LogCompactionRanksTest.state(r), "after cut at " + at);
                r.checkpoint().get(60, TimeUnit.SECONDS);
                assertEquals(want, LogCompactionRanksTest.state(r), "after cut at " + at + " and a checkpoint");
                assertEquals(List.of(), r.danglingArchiveMappings());
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("cut at " + at + ": " + e, e);
            }
            try (Varve r = Varve.open(levelsConfig(d))) {
                assertEquals(want, LogCompactionRanksTest.state(r), "reopen after cut at " + at);
            }
            deleteTree(d);
        }
        assertTrue(compacted, "the checkpoint compacted");
    }
}
