package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.engine.Cursor;
import dev.varve.engine.FixtureStores;
import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The read commands end to end against real store directories written by child JVMs: healthy with snapshots in
 * three rank levels, crashed with WAL records to replay, and crashed mid-checkpoint with its recovery files on disk.
 * Each run leaves every file byte-identical (content, size, mtime; nothing created or deleted).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliReadCommandsTest {
    @TempDir
    static Path tmp;
    static Path healthy;
    static Path crashed;
    static Path mid;

    @BeforeAll
    static void stores() {
        healthy = tmp.resolve("healthy");
        crashed = tmp.resolve("crashed");
        mid = tmp.resolve("mid");
        FixtureStores.create(healthy, "healthy");
        FixtureStores.create(crashed, "crashed");
        FixtureStores.create(mid, "midcheckpoint");
    }

    static void copyTree(Path from, Path to) throws java.io.IOException {
        try (java.util.stream.Stream<Path> files = Files.walk(from)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(target);
                else Files.copy(p, target);
            }
        }
    }

    /** Runs the tool and checks that the store directory did not change. */
    static CliRun unchanged(Path dir, String... args) {
        Map<String, String> before = DirectoryFingerprint.of(dir);
        CliRun r = CliRun.of(args);
        assertEquals(before, DirectoryFingerprint.of(dir), "the directory changed: " + r);
        return r;
    }

    @Test
    void infoShowsTablesCheckpointAndPendingRecovery() {
        CliRun h = unchanged(healthy, "info", healthy.toString());
        assertEquals(0, h.code(), h.toString());
        assertTrue(h.out().contains("recoveryPending: no"), h.out());
        assertTrue(h.out().contains("markers: start and end (complete)"), h.out());
        assertTrue(h.out().matches("(?s).*\\blargestValue: [1-9][0-9]*\\R.*"), "the store's largest value, in bytes: " + h.out());
        assertTrue(h.out().contains("name orders, partitions 3, entries " + FixtureStores.model(FixtureStores.ROUNDS).get("orders").size()), h.out());
        assertTrue(h.out().contains("  perRank:\n    1: 2\n    2: 2\n    3: 2\n"), h.out());
        CliRun c = unchanged(crashed, "info", "--json", crashed.toString());
        assertEquals(0, c.code(), c.toString());
        assertTrue(c.out().startsWith("{\"store\":"), c.out());
        assertTrue(c.out().contains("\"perRank\":{\"1\":"), "an object, not its text: " + c.out());
        assertTrue(c.out().contains("\"recoveryPending\":\"yes: 0 pages to restore from none, "), c.out());
        CliRun m = unchanged(mid, "info", mid.toString());
        assertEquals(0, m.code(), m.toString());
        assertTrue(m.out().contains("markers: start only (interrupted"), m.out());
        assertTrue(m.out().contains("recoveryData: recovery files"), m.out());
        assertTrue(m.out().contains("pages to restore from recovery files"), m.out());
        assertTrue(m.out().contains("name orders, partitions 3, entries " + FixtureStores.model(FixtureStores.ROUNDS + 1).get("orders").size()), m.out());
    }

    /**
     * A checkpoint writes its recovery files before its start marker: a crash between the two leaves files of a
     * checkpoint with no marker at all, which recovery ignores and info still counts as on disk.
     */
    @Test
    void infoCountsRecoveryFilesOfACheckpointStoppedBeforeItsStartMarker() throws java.io.IOException {
        Path store = StoreCopy.of(healthy, tmp.resolve("prestart"));
        long latest = dev.varve.engine.StoreInspector.lastCheckpoint(dev.varve.engine.StoreInspector.detectConfig(store)).orElseThrow().id();
        List<Path> recovery;
        try (java.util.stream.Stream<Path> s = Files.list(mid.resolve("checkpoints"))) {
            recovery = s.filter(p -> p.getFileName().toString().contains("-recovery-")).sorted().toList();
        }
        assertFalse(recovery.isEmpty(), "the interrupted checkpoint left no recovery file to copy");
        for (int n = 0; n < recovery.size(); n++)
            Files.copy(recovery.get(n), store.resolve("checkpoints").resolve(String.format("cp-%016d-recovery-%02d.bin", latest + 1, n)));

        CliRun r = unchanged(store, "info", store.toString());
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("id: " + latest + "\n") && r.out().contains("markers: start and end (complete)"), r.out());
        assertTrue(r.out().contains("recoveryFilesOnDisk: " + recovery.size() + "\n"), r.out());
        assertTrue(r.out().contains(recovery.size() + " of checkpoint " + (latest + 1) + ", which has no start marker"), r.out());
        CliRun m = unchanged(mid, "info", mid.toString()); // the interrupted checkpoint's own files: the ones it restores from
        assertTrue(m.out().contains("recoveryFilesOnDisk: " + recovery.size() + "\n") && !m.out().contains("recoveryFilesUnread"), m.out());
    }

    @Test
    void verifyFindsEachStoreClean() {
        for (Path dir : new Path[]{healthy, crashed, mid}) {
            CliRun r = unchanged(dir, "verify", dir.toString());
            assertEquals(0, r.code(), r.toString());
            assertTrue(r.out().contains("result: clean"), r.out());
        }
        CliRun r = unchanged(mid, "verify", "--json", mid.toString());
        assertTrue(r.out().contains("\"recoveryFiles\":") && !r.out().contains("\"recoveryFiles\":0"), r.out());
    }

    /** A long-running store's logs keep the retained history: the tool says below which id every snapshot was dropped. */
    @Test
    void snapshotsSaysBelowWhichIdTheDropRecordsWereCompacted() {
        Path dir = tmp.resolve("compacted");
        VarveConfig config = SmallStore.fresh(dir).retention(RankTreePolicy.levels(Retention.keepLast(4))).build();
        try (Varve store = Varve.open(config)) {
            for (int i = 0; i < 9_000; i++) {
                byte[] key = ("k" + i % 100).getBytes(StandardCharsets.UTF_8);
                store.writeAndSnapshot(b -> b.put("t", key, new byte[8]));
            }
            store.checkpoint().join(); // after it the logs are compacted: past 4,096 records
        }
        CliRun r = unchanged(dir, "snapshots", "--json", dir.toString());
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("{\"id\":9000,\"rank\":1,"), r.out());
        // the horizon is the latest snapshot the checkpoint counted: the live ones below it (8,997 to 8,999) are listed live
        assertTrue(r.out().contains("\"droppedBefore\":{\"below\":9000,\"by\":"), r.out());
        assertTrue(!r.out().contains("{\"id\":1,\"dropped\":"), "snapshot 1's drop is no longer detailed: " + r.out());
        assertTrue(r.out().contains("{\"id\":8996,\"dropped\":"), "the latest drop is detailed: " + r.out());
    }

    /**
     * Behind a snapshot kept for good (rank 2 under keepLast(2), keepAll()) the tools read the compacted logs: verify
     * finds nothing wrong, snapshots lists the kept one live and every other below the latest checkpoint's as dropped
     * before it, and the snapshot log holds the live ones' records, not the 6,000 declared.
     */
    @Test
    void theToolsReadTheLogsCompactedPastASnapshotKeptForGood() throws java.io.IOException {
        Path dir = tmp.resolve("kept");
        VarveConfig config = SmallStore.fresh(dir)
                .retention(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepAll())).build();
        try (Varve store = Varve.open(config)) {
            for (int i = 1; i <= 6_000; i++) {
                byte[] key = ("k" + i % 100).getBytes(StandardCharsets.UTF_8);
                store.writeAndSnapshot(b -> b.put("t", key, new byte[8]), i == 1 ? 2 : 1);
                if (i % 1000 == 0) store.checkpoint().join();
            }
        }
        long log = Files.size(dir.resolve("archive").resolve("snapshots.log"));
        long bound = 64 + 48L * (4096 + 1000 + 3); // at most what makes it due for a rewrite, a checkpoint's worth, the live ones
        assertTrue(log <= bound, "snapshots.log holds " + log + " bytes after 6,000 snapshots, 3 live (bound " + bound + ")");
        CliRun verify = unchanged(dir, "verify", "--json", dir.toString());
        assertEquals(0, verify.code(), verify.toString());
        CliRun r = unchanged(dir, "snapshots", "--json", dir.toString());
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("{\"id\":1,\"rank\":2,") && r.out().contains("\"keptBy\":\"keepAll()\""), r.out());
        assertTrue(r.out().contains("{\"id\":5999,\"rank\":1,") && r.out().contains("{\"id\":6000,\"rank\":1,"), r.out());
        // the horizon of the latest compaction, at the checkpoint of 5,000 (the log is rewritten once it holds 4,096 records;
        // at 6,000 it holds the 1,000 since and the live ones)
        assertTrue(r.out().contains("\"droppedBefore\":{\"below\":5000,\"by\":"), r.out());
        try (Varve ro = Varve.openReadOnly(config)) {
            assertEquals(List.of(1L, 5999L, 6000L), ro.snapshots().stream().map(dev.varve.engine.SnapshotInfo::id).toList());
        }
    }

    @Test
    void snapshotsListsRanksLsnsAndBytes() throws java.io.IOException {
        CliRun r = unchanged(healthy, "snapshots", "--json", healthy.toString());
        assertEquals(0, r.code(), r.toString());
        for (int i = 0; i < FixtureStores.ROUNDS; i++)
            assertTrue(r.out().contains("{\"id\":" + (i + 1) + ",\"rank\":" + (1 + i % FixtureStores.LEVELS) + ",\"declared\":"), r.out());
        // the rule keeping each snapshot, by the policy the store recorded when it was last opened for writing
        assertTrue(r.out().contains("\"keptBy\":\"keepAll()\",\"pinned\":true"), r.out());
        assertTrue(r.out().contains("\"dropped\":[]"), r.out());
        // a store that recorded none (an earlier build): unknown, unless --config tells it
        Path older = tmp.resolve("older");
        copyTree(healthy, older);
        Files.delete(older.resolve("archive").resolve("retention.policy"));
        CliRun unknown = unchanged(older, "snapshots", "--json", older.toString());
        assertTrue(unknown.out().contains("\"retention\":\"unknown: give --config"), unknown.out());
        assertFalse(unknown.out().contains("keptBy"), unknown.out());
        // a damaged record is no rule either: the snapshots are listed, the damage named
        Path damaged = tmp.resolve("damaged-policy");
        copyTree(healthy, damaged);
        Path policy = damaged.resolve("archive").resolve("retention.policy");
        byte[] bytes = Files.readAllBytes(policy);
        bytes[bytes.length - 1] ^= 1;
        Files.write(policy, bytes);
        CliRun listed = unchanged(damaged, "snapshots", "--json", damaged.toString());
        assertEquals(0, listed.code(), listed.toString());
        assertTrue(listed.out().contains("\"retention\":\"unknown: the recorded policy is damaged") && listed.out().contains("retention.policy"), listed.out());
        assertTrue(listed.out().contains("{\"id\":1,\"rank\":1,\"declared\":"), listed.out());
        assertFalse(listed.out().contains("keptBy"), listed.out());
        Path settings = Files.writeString(tmp.resolve("fixture.properties"), "varve.retention=keepAll(),keepAll(),keepAll()\nvarve.walSegmentSize=4m\nvarve.archiveSegmentSize=256k\n"
                + "varve.snapshotPageWindow=2\nvarve.captureBufferSize=1m\nvarve.partitions=3\n");
        CliRun configured = unchanged(older, "snapshots", "--json", older.toString(), "--config", settings.toString());
        assertEquals(0, configured.code(), configured.toString());
        assertTrue(configured.out().contains("\"keptBy\":\"keepAll()\",\"pinned\":true"), configured.out());
        CliRun text = unchanged(mid, "snapshots", mid.toString());
        assertEquals(0, text.code(), text.toString());
        assertTrue(text.out().contains("id 6, rank 3, declared "), text.out());
    }

    @Test
    void getReadsNowAndAsOfEachSnapshot() {
        for (int snap = 1; snap <= FixtureStores.ROUNDS; snap++) {
            TreeMap<String, byte[]> model = FixtureStores.model(snap).get("accounts");
            String key = model.firstKey();
            CliRun r = unchanged(healthy, "get", healthy.toString(), "--table", "accounts", "--as-of", String.valueOf(snap), "--encoding", "hex",
                    "hex:" + HexFormat.of().formatHex(key.getBytes(StandardCharsets.UTF_8)));
            assertEquals(0, r.code(), r.toString());
            assertEquals(HexFormat.of().formatHex(model.get(key)), r.out().trim());
        }
        TreeMap<String, byte[]> now = FixtureStores.model(FixtureStores.ROUNDS + 1).get("orders");
        CliRun r = unchanged(crashed, "get", crashed.toString(), "--table", "orders", now.lastKey());
        assertEquals(new String(now.lastEntry().getValue(), StandardCharsets.UTF_8), r.out().trim());
        CliRun absent = unchanged(healthy, "get", healthy.toString(), "--table", "orders", "no-such-key", "--json");
        assertEquals(Main.ABSENT, absent.code(), absent.toString());
        assertTrue(absent.out().contains("\"found\":false"), absent.out());
        CliRun noTable = unchanged(healthy, "get", healthy.toString(), "--table", "nope", "k");
        assertEquals(Main.USAGE, noTable.code(), noTable.toString());
        assertTrue(noTable.err().contains("no table 'nope'"), noTable.err());
        CliRun noSnapshot = unchanged(healthy, "get", healthy.toString(), "--table", "orders", "--as-of", "99", "k");
        assertEquals(Main.UNUSABLE, noSnapshot.code(), noSnapshot.toString());
        assertTrue(noSnapshot.err().contains("snapshot 99 was never declared"), noSnapshot.err());
    }

    @Test
    void scanPrintsARangeInKeyOrder() {
        TreeMap<String, byte[]> model = FixtureStores.model(3).get("orders");
        List<String> keys = new ArrayList<>(model.keySet());
        String from = keys.get(5);
        String to = keys.get(25);
        CliRun r = unchanged(healthy, "scan", healthy.toString(), "--table", "orders", "--as-of", "3", "--from", from, "--to", to);
        assertEquals(0, r.code(), r.toString());
        List<String> want = new ArrayList<>();
        for (var e : model.subMap(from, to).entrySet()) want.add(e.getKey() + "\t" + new String(e.getValue(), StandardCharsets.UTF_8));
        assertEquals(want, r.out().lines().toList());
        CliRun json = unchanged(healthy, "scan", healthy.toString(), "--table", "orders", "--limit", "2", "--json");
        assertEquals(2, json.out().lines().count(), json.out());
        assertTrue(json.out().startsWith("{\"key\":\"" + FixtureStores.model(FixtureStores.ROUNDS).get("orders").firstKey() + "\""), json.out());
    }

    @Test
    void dumpThenLoadRoundTrips() throws Exception {
        for (Path dir : new Path[]{healthy, mid}) {
            Path dump = tmp.resolve(dir.getFileName() + ".dump");
            CliRun d = unchanged(dir, "dump", dir.toString(), "--out", dump.toString());
            assertEquals(0, d.code(), d.toString());
            Path loaded = tmp.resolve(dir.getFileName() + "-loaded");
            CliRun l = CliRun.of("load", dump.toString(), "--to", loaded.toString());
            assertEquals(0, l.code(), l.toString());
            int rounds = dir == healthy ? FixtureStores.ROUNDS : FixtureStores.ROUNDS + 1;
            try (Varve v = Varve.open(SmallStore.config(loaded).build())) {
                assertEquals(hex(FixtureStores.model(rounds)), contents(v::table));
            }
        }
        Path dump = tmp.resolve("asof2.dump");
        assertEquals(0, unchanged(healthy, "dump", healthy.toString(), "--as-of", "2", "--table", "accounts", "--out", dump.toString()).code());
        Path loaded = tmp.resolve("asof2-loaded");
        assertEquals(0, CliRun.of("load", dump.toString(), "--to", loaded.toString()).code());
        try (Varve v = Varve.open(SmallStore.config(loaded).build())) {
            assertEquals(List.of("accounts"), v.tables());
            assertEquals(FixtureStores.model(2).get("accounts").keySet(), contents(v::table).get("accounts").keySet());
        }
        Files.write(dump, new byte[]{1}, java.nio.file.StandardOpenOption.APPEND);
        CliRun bad = CliRun.of("load", dump.toString(), "--to", tmp.resolve("never").toString());
        assertEquals(Main.UNUSABLE, bad.code(), bad.toString());
        assertTrue(!Files.exists(tmp.resolve("never")), "a rejected load created its target");
    }

    @Test
    void walDumpShowsRecordsAndKeys() {
        CliRun r = unchanged(crashed, "wal-dump", crashed.toString());
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("DATA_BATCH") && r.out().contains("SNAPSHOT") && r.out().contains("CREATE_TABLE"), r.out());
        assertTrue(r.out().contains("    put    orders p") && r.out().contains("    remove accounts p"), r.out());
        String second = r.out().lines().filter(l -> l.startsWith("lsn ")).skip(1).findFirst().orElseThrow();
        long lsn = Long.parseLong(second.split(" ")[1]);
        CliRun from = unchanged(crashed, "wal-dump", crashed.toString(), "--from-lsn", String.valueOf(lsn), "--limit", "1", "--json");
        assertTrue(from.out().startsWith("{\"lsn\":" + lsn + ","), from.out());
        CliRun beyond = unchanged(crashed, "wal-dump", crashed.toString(), "--from-lsn", String.valueOf(Long.MAX_VALUE / 2));
        assertEquals(Main.USAGE, beyond.code(), beyond.toString());
    }

    /**
     * Backups as of the oldest snapshot and the latest two: one of each rank level (1, 2 and 3), the oldest and the
     * latest; -Plong backs up every snapshot.
     */
    @Test
    void backupAsOfASnapshotOfEachRankEqualsItsModelAndVerifies() throws java.io.IOException {
        backupsAsOf("backup-", 1, FixtureStores.ROUNDS - 1, FixtureStores.ROUNDS);
        Path fromCrash = tmp.resolve("backup-mid");
        assertEquals(0, unchanged(mid, "backup", mid.toString(), "--to", fromCrash.toString()).code());
        try (Varve v = Varve.open(SmallStore.config(fromCrash).build())) {
            assertEquals(hex(FixtureStores.model(FixtureStores.ROUNDS + 1)), contents(v::table));
        }
        CliRun notEmpty = CliRun.of("backup", healthy.toString(), "--to", fromCrash.toString());
        assertEquals(Main.USAGE, notEmpty.code(), notEmpty.toString());
    }

    /** Each of the fixture's snapshots backed up (a dozen tool runs and opens: the default suite takes one of each rank). */
    @Test
    @Tag("long")
    void backupAsOfEachSnapshotEqualsItsModelAndVerifies() throws java.io.IOException {
        backupsAsOf("backup-each-", java.util.stream.IntStream.rangeClosed(1, FixtureStores.ROUNDS).toArray());
    }

    /**
     * Backs up {@code healthy} as of each of {@code snapshots} into {@code tmp/prefix<id>}: its model, no snapshots, verify
     * clean. The new stores are configured as {@link SmallStore#fresh} (--new-config): verify reads a new store's
     * preallocated WAL segments to their end, and at the default 64 MiB that was a second of CPU per backup; the backup
     * of {@code mid} above keeps a target of the defaults.
     */
    private static void backupsAsOf(String prefix, int... snapshots) throws java.io.IOException {
        Path small = Files.writeString(tmp.resolve(prefix + "target.properties"),
                "varve.dataRegionSize=16m\nvarve.checkpointBufferSize=1m\nvarve.captureBufferSize=1m\nvarve.walSegmentSize=4m\n");
        for (int snap : snapshots) {
            Path to = tmp.resolve(prefix + snap);
            CliRun r = unchanged(healthy, "backup", healthy.toString(), "--as-of", String.valueOf(snap), "--to", to.toString(),
                    "--new-config", small.toString());
            assertEquals(0, r.code(), r.toString());
            try (Varve v = Varve.open(SmallStore.fresh(to).build())) {
                assertEquals(hex(FixtureStores.model(snap)), contents(v::table), "backup as of " + snap);
                assertEquals(List.of(), v.snapshots());
            }
            CliRun verify = CliRun.of("verify", to.toString());
            assertEquals(0, verify.code(), verify.toString());
        }
    }

    @Test
    void everyCommandHasHelpAndBadInputIsAUsageError() {
        for (String cmd : new String[]{"info", "verify", "snapshots", "get", "scan", "dump", "load", "wal-dump", "backup", "salvage"}) {
            CliRun r = CliRun.of(cmd, "--help");
            assertEquals(0, r.code(), r.toString());
            assertTrue(r.out().startsWith("Usage: varve " + cmd), r.out());
        }
        CliRun top = CliRun.of("--help");
        assertTrue(top.out().contains("Exit codes:"), top.out());
        assertEquals(Main.USAGE, CliRun.of("info").code());
        assertEquals(Main.USAGE, CliRun.of("frobnicate").code());
        CliRun missing = CliRun.of("info", tmp.resolve("missing").toString());
        assertEquals(Main.UNUSABLE, missing.code(), missing.toString());
        CliRun notStore = CliRun.of("verify", tmp.toString());
        assertEquals(Main.UNUSABLE, notStore.code(), notStore.toString());
    }

    @Test
    void aStoreOpenForWritingIsUnusable() {
        Path live = tmp.resolve("live");
        try (Varve writer = Varve.open(SmallStore.fresh(live).build())) {
            writer.table("t").put(new byte[]{1}, new byte[]{2});
            for (String cmd : new String[]{"verify", "info", "wal-dump", "snapshots"}) {
                CliRun r = CliRun.of(cmd, live.toString());
                assertEquals(Main.UNUSABLE, r.code(), cmd + ": " + r);
                assertTrue((r.out() + r.err()).contains("already open for writing in this JVM"), cmd + ": " + r);
            }
        }
        assertEquals(0, CliRun.of("verify", live.toString()).code());
    }

    /** The fixture's tables as key -> hex value, comparable with {@link #hex}. */
    static Map<String, TreeMap<String, String>> contents(java.util.function.Function<String, dev.varve.engine.Table> tables) {
        Map<String, TreeMap<String, String>> out = new java.util.HashMap<>();
        for (String t : FixtureStores.TABLES) {
            TreeMap<String, String> m = new TreeMap<>();
            try (Cursor c = tables.apply(t).scan(null, null)) {
                while (c.next()) m.put(new String(c.key(), StandardCharsets.UTF_8), HexFormat.of().formatHex(c.value()));
            }
            out.put(t, m);
        }
        return out;
    }

    /** A model with hex values. */
    static Map<String, TreeMap<String, String>> hex(Map<String, TreeMap<String, byte[]>> model) {
        Map<String, TreeMap<String, String>> out = new java.util.HashMap<>();
        model.forEach((t, m) -> {
            TreeMap<String, String> h = new TreeMap<>();
            m.forEach((k, v) -> h.put(k, HexFormat.of().formatHex(v)));
            out.put(t, h);
        });
        return out;
    }
}
