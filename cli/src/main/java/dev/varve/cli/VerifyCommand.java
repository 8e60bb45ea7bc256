package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.StoreVerifier;
import dev.varve.server.Standby;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;

/** {@code varve verify DIR}: every checksum and structure of a store, without writing. */
@Command(name = "verify", mixinStandardHelpOptions = true,
        description = {"Checks every CRC of every page file, WAL segment, checkpoint marker, recovery file and archive log (Pagelog, Maplog "
                + "and Skippy levels, snapshot logs) and a standby's snapshot map; every B+tree's structure; every live snapshot's archived pages and mappings "
                + "reachable (I8). Names each damage: file, offset, what. Never writes.",
                "Whether a bad last WAL record is a torn tail (cut by open: exit 0) or damage (refused by open) depends on the "
                        + "walSyncMode that wrote its WAL segment, which the segment's header records, as open judges it. Segments "
                        + "written by releases before WAL format 2 do not record it: those are judged under the mode given with "
                        + "--wal-sync-mode or --config; without either such a record is damage, as under the default LOG_ONLY, and "
                        + "reported as a torn tail if the store runs under FSYNC.",
                "What a crash left in the archive past the last checkpoint mark (torn records, records no checkpoint covered) "
                        + "is listed as archiveCutByOpen, not as damage: open cuts it and replay writes it again; so are the pages a "
                        + "crash tore while a checkpoint wrote them (pagesRestoredByOpen), which open puts back from that checkpoint's "
                        + "recovery files or physical WAL records.",
                "Exit code 0: clean; 1: damage found; 2: the store cannot be checked."})
final class VerifyCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Option(names = "--wal-sync-mode", paramLabel = "MODE",
            description = "The walSyncMode to judge WAL segments of releases before WAL format 2 by, which do not record the mode "
                    + "that wrote them (newer segments are judged by theirs): ${COMPLETION-CANDIDATES} (default: the --config file's, else LOG_ONLY).")
    WalSyncMode walSyncMode;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() {
        VarveConfig config;
        try {
            config = store.config();
        } catch (UnusableStoreException | IllegalArgumentException e) {
            output.err().println("varve: " + Main.describe(e));
            return Main.UNUSABLE;
        }
        if (walSyncMode != null) config = config.toBuilder().walSyncMode(walSyncMode).build();
        StoreVerifier.Report report = StoreVerifier.verify(config);
        StoreVerifier.Report underFsync = walSyncMode == null && store.layout.config == null ? asFsyncTail(config, report) : null;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", config.path().toString());
        if (report.unusable() != null) {
            r.put("result", "unusable");
            r.put("reason", report.unusable());
            output.print(r);
            return Main.UNUSABLE;
        }
        List<StoreInspector.Damage> found = new ArrayList<>(report.damage());
        Object standbyMap = standbyMap(config.path(), found);
        // the WAL check says which mode judged the segment (the one that wrote it, unless an earlier release did)
        String tornTail = report.files().walTornTail() == null ? "none" : report.files().walTornTail()
                + " (a write a crash cut short, so it was not acknowledged; open cuts it)";
        if (underFsync != null) { // the store as FSYNC reads it, with the one spot a non-FSYNC open refuses as damage
            report = underFsync;
            tornTail = "only under walSyncMode=FSYNC: " + underFsync.files().walTornTail() + " (open under FSYNC cuts it, as a write a crash cut "
                    + "short before its fsync and so never acknowledged; under LOG_ONLY or BACKGROUND it is the damage listed and open "
                    + "refuses the store: give --wal-sync-mode to check it for its mode)";
        }
        StoreInspector.FileCheck f = report.files();
        Map<String, Object> checked = new LinkedHashMap<>();
        checked.put("pages", f.pages());
        checked.put("walSegments", f.walSegments());
        checked.put("walRecords", f.walRecords());
        checked.put("walTornTail", tornTail);
        checked.put("checkpointMarkers", f.markers());
        checked.put("recoveryFiles", f.recoveryFiles());
        if (standbyMap != null) checked.put("standbySnapshotMap", standbyMap);
        checked.put("archiveRecords", f.archiveRecords());
        // what a crash left that open repairs without reading it: archive tails past the checkpoint mark (cut, and
        // written again by replay) and pages torn while a checkpoint wrote them (put back from its recovery data)
        checked.put("archiveCutByOpen", listed(f.archiveCut(), c -> spot(c.file(), "from", c.from(), "bytes", c.bytes())));
        checked.put("pagesRestoredByOpen", listed(f.pagesRestored(), p -> spot(p.file(), "at", p.offset(), "found", p.found())));
        if (report.structure() != null) {
            checked.put("trees", report.structure().trees());
            checked.put("entries", report.structure().entries());
            checked.put("snapshotsRead", report.structure().snapshots());
        } else {
            checked.put("trees", "not checked: the store does not open");
        }
        r.put("checked", checked);
        List<Map<String, Object>> damage = new ArrayList<>();
        for (StoreInspector.Damage d : found) damage.add(spot(d.file(), "offset", d.offset(), "what", d.what()));
        r.put("result", damage.isEmpty() ? "clean" : damage.size() + " damaged spots");
        r.put("damage", damage);
        output.print(r);
        return damage.isEmpty() ? Main.OK : Main.DAMAGE;
    }

    /**
     * The lines of the snapshot map of a standby kept by {@code backup --follow} ({@link Standby}), null when {@code dir}
     * is not one; damage in it is added to {@code found}.
     */
    private static Object standbyMap(Path dir, List<StoreInspector.Damage> found) {
        if (!Files.exists(dir.resolve(Standby.SNAPSHOT_MAP))) return null;
        try {
            return Standby.snapshots(dir).size();
        } catch (CorruptionException e) {
            found.add(new StoreInspector.Damage(e.file(), e.offset(), e.what()));
            return "damaged";
        } catch (UncheckedIOException e) {
            found.add(new StoreInspector.Damage(dir.resolve(Standby.SNAPSHOT_MAP), 0, "cannot be read: " + e.getCause().getMessage()));
            return "unreadable";
        }
    }

    /** "none", or each of {@code items} as {@code fields} gives it. */
    private static <T> Object listed(List<T> items, Function<T, Map<String, Object>> fields) {
        if (items.isEmpty()) return "none";
        List<Map<String, Object>> out = new ArrayList<>();
        for (T item : items) out.add(fields.apply(item));
        return out;
    }

    /** One spot of a file: its path, then two named figures. */
    private static Map<String, Object> spot(Path file, String name1, Object value1, String name2, Object value2) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("file", file.toString());
        m.put(name1, value1);
        m.put(name2, value2);
        return m;
    }

    /**
     * The report of the store checked as FSYNC runs it, when that finds no damage but a torn tail where the check
     * under {@code config}'s mode found damage: the one bad record with its length at the WAL's end that only an
     * FSYNC open cuts; null otherwise. Only a WAL segment of format 1 can differ so (newer ones record the mode that
     * wrote them, which judges them under either reading), and it does not say which mode wrote it, so both readings
     * are told rather than a plain "does not open" that an FSYNC open contradicts.
     */
    private static StoreVerifier.Report asFsyncTail(VarveConfig config, StoreVerifier.Report report) {
        if (config.walSyncMode() == WalSyncMode.FSYNC || report.unusable() != null || report.damage().isEmpty()) return null;
        StoreVerifier.Report fsync = StoreVerifier.verify(config.toBuilder().walSyncMode(WalSyncMode.FSYNC).build());
        return fsync.unusable() == null && fsync.damage().isEmpty() && fsync.files().walTornTail() != null ? fsync : null;
    }
}
