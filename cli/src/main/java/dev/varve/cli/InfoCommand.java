package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.WalInspector;
import dev.varve.engine.RecoveryReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/** {@code varve info DIR}: what a store holds and in which state its files are. */
@Command(name = "info", mixinStandardHelpOptions = true,
        description = {"Tables, partitions and sizes, WAL range, the last checkpoint and its marker state, the recovery data recorded on disk, "
                + "archive bytes per rank level, live snapshots, and whether recovery is pending. Opens the store read-only: a crashed "
                + "store is recovered in memory to answer, and no file changes.",
                "The WAL is judged as the store's open judges it: from the LSN recovery reads from, each segment under the walSyncMode "
                        + "that wrote it, which its header records (a bad last record is a torn tail when FSYNC wrote it); a segment of "
                        + "WAL format 1, which does not record it, under the walSyncMode of --config (default LOG_ONLY). Damage before that LSN, which no recovery "
                        + "reads, is listed with its file and offset (damageRecoveryDoesNotRead) and the store is shown."})
final class InfoCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() throws IOException {
        VarveConfig config = store.config();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", config.path().toString());
        Map<String, Object> layout = new LinkedHashMap<>();
        layout.put("pageSize", config.pageSize());
        layout.put("walSegmentSize", config.walSegmentSize());
        layout.put("rankLevels", config.retention().levelCount());
        r.put("layout", layout);
        try (Varve v = store.openReadOnly()) { // holds the shared lock: no writer moves the files while they are read
            r.put("pageFiles", files(config.path().resolve("pages"), "t*-p*.page"));
            r.put("wal", wal(config));
            r.put("lastCheckpoint", lastCheckpoint(config));
            RecoveryReport rec = v.recoveryReport();
            boolean pending = rec.restoredPages() > 0 || rec.replayedRecords() > 0;
            r.put("recoveryPending", pending ? "yes: " + rec.restoredPages() + " pages to restore from " + rec.restoredFrom() + ", "
                    + rec.replayedRecords() + " logical WAL records to replay (shown below as recovered in memory)" : "no");
            r.put("tables", tables(v));
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("bytes", v.metrics().archiveBytes());
            a.put("bytesPerLevel", v.metrics().archiveBytesPerLevel());
            r.put("archive", a);
            r.put("snapshots", snapshots(v));
        }
        output.print(r);
        return Main.OK;
    }

    private static Map<String, Object> wal(VarveConfig config) throws IOException {
        WalInspector.Range wal = WalInspector.range(config);
        Map<String, Object> w = new LinkedHashMap<>(files(config.path().resolve("wal"), "wal-*.seg{,.tmp,.durable}")); // .tmp: the next segment, prepared; .durable: what forces write
        w.put("firstLsn", wal.firstLsn());
        w.put("endLsn", wal.endLsn());
        w.put("tornTail", wal.tailCut() == null ? "none" : wal.tailCut());
        w.put("recoveryReadsFrom", wal.recoveryFrom());
        // damage recovery never reads does not stop the store: told, not refused (verify lists it as damage)
        if (!wal.unreadDamage().isEmpty()) w.put("damageRecoveryDoesNotRead", wal.unreadDamage().stream().map(Object::toString).toList());
        return w;
    }

    private static Map<String, Object> lastCheckpoint(VarveConfig config) {
        Optional<StoreInspector.CheckpointState> cp = StoreInspector.lastCheckpoint(config);
        SortedMap<Long, Integer> files = StoreInspector.recoveryFilesOnDisk(config);
        Map<String, Object> c = new LinkedHashMap<>();
        if (cp.isEmpty()) {
            c.put("id", files.isEmpty() ? "none (no checkpoint ever started)" : "none (no checkpoint got as far as its start marker)");
        } else {
            StoreInspector.CheckpointState s = cp.get();
            c.put("id", s.id());
            c.put("markLsn", s.markLsn());
            c.put("markers", s.complete() ? "start and end (complete)" : "start only (interrupted: its pages are restored at open)");
            c.put("recoveryData", s.recoveryData());
            // what every page file must carry (an error naming a page file of another store quotes both ids)
            c.put("storeId", s.storeId() == 0 ? "none (markers of an earlier build)" : String.format("%016x", s.storeId()));
            // bytes: replay reserves, per operation, the overflow chain of a value this large as the most it may free
            c.put("largestValue", s.largestValue() < 0 ? "not recorded (markers of an earlier build, or a store loaded from an image): replay bounds by 1 MiB"
                    : s.largestValue());
        }
        // every recovery file in the directory: a crash can leave some that are not the latest checkpoint's
        c.put("recoveryFilesOnDisk", files.values().stream().mapToInt(Integer::intValue).sum());
        List<String> unread = unreadRecoveryFiles(cp.orElse(null), files);
        if (!unread.isEmpty()) c.put("recoveryFilesUnread", unread);
        return c;
    }

    /**
     * What each checkpoint's recovery files on disk that recovery will not read are: all but those of the latest
     * checkpoint when it is interrupted (the ones it restores from).
     */
    private static List<String> unreadRecoveryFiles(StoreInspector.CheckpointState latest, SortedMap<Long, Integer> files) {
        List<String> unread = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : files.entrySet()) {
            long id = e.getKey();
            String n = e.getValue() + " of checkpoint " + id;
            if (latest == null || id > latest.id()) {
                unread.add(n + ", which has no start marker: a crash stopped it after it wrote them and before it began writing pages, "
                        + "so recovery ignores them; the next checkpoint to complete deletes them");
            } else if (id < latest.id() || latest.complete()) {
                unread.add(n + ", left by a crash after " + (id < latest.id() ? "a later" : "that") + " checkpoint completed and before "
                        + "they were deleted: recovery ignores them; the next checkpoint to complete deletes them");
            }
        }
        return unread;
    }

    private static Map<String, Object> snapshots(Varve v) {
        List<SnapshotInfo> snaps = v.snapshots();
        Map<String, Integer> perRank = new TreeMap<>(Comparator.comparingInt(Integer::parseInt)); // an object in JSON
        for (SnapshotInfo s : snaps) perRank.merge(Integer.toString(s.rank()), 1, Integer::sum);
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("live", snaps.size());
        s.put("perRank", perRank);
        s.put("latest", snaps.isEmpty() ? "none" : snaps.get(snaps.size() - 1).id());
        return s;
    }

    private static List<Map<String, Object>> tables(Varve v) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (String name : v.tables()) {
            Table t = v.table(name);
            long[] sizes = new long[t.partitions()];
            long total = 0;
            for (int p = 0; p < sizes.length; p++) total += sizes[p] = t.partition(p).size();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", name);
            m.put("partitions", t.partitions());
            m.put("entries", total);
            m.put("entriesPerPartition", sizes);
            out.add(m);
        }
        return out;
    }

    /**
     * Number and total bytes of the regular files in {@code dir} whose names match {@code glob}: the store's own, not
     * what else lies there (an editor's swap file, a .DS_Store, an operator's copy).
     */
    static Map<String, Object> files(Path dir, String glob) throws IOException {
        long n = 0;
        long bytes = 0;
        if (Files.isDirectory(dir)) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, glob)) {
                for (Path p : s) {
                    if (!Files.isRegularFile(p)) continue;
                    n++;
                    bytes += Files.size(p);
                }
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("files", n);
        m.put("bytes", bytes);
        return m;
    }
}
