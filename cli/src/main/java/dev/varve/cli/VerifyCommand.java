package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.StoreVerifier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve verify DIR}: every checksum and structure of a store, without writing. */
@Command(name = "verify", mixinStandardHelpOptions = true,
        description = {"Checks every CRC of every page file, WAL segment, checkpoint marker, recovery file and archive log (Pagelog, Maplog "
                + "and Skippy levels, snapshot logs); every B+tree's structure; every live snapshot's archived pages and mappings "
                + "reachable (I8). Names each damage: file, offset, what. Never writes.",
                "Exit code 0: clean; 1: damage found; 2: the store cannot be checked."})
final class VerifyCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

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
        StoreVerifier.Report report = StoreVerifier.verify(config);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", config.path().toString());
        if (report.unusable() != null) {
            r.put("result", "unusable");
            r.put("reason", report.unusable());
            output.print(r);
            return Main.UNUSABLE;
        }
        StoreInspector.FileCheck f = report.files();
        Map<String, Object> checked = new LinkedHashMap<>();
        checked.put("pages", f.pages());
        checked.put("walSegments", f.walSegments());
        checked.put("walRecords", f.walRecords());
        checked.put("walTornTail", f.walTornTail() == null ? "none" : f.walTornTail() + " (a crash cut the last write; recovery drops it)");
        checked.put("checkpointMarkers", f.markers());
        checked.put("recoveryFiles", f.recoveryFiles());
        checked.put("archiveRecords", f.archiveRecords());
        if (report.structure() != null) {
            checked.put("trees", report.structure().trees());
            checked.put("entries", report.structure().entries());
            checked.put("snapshotsRead", report.structure().snapshots());
        } else {
            checked.put("trees", "not checked: the store does not open");
        }
        r.put("checked", checked);
        List<Map<String, Object>> damage = new ArrayList<>();
        for (StoreInspector.Damage d : report.damage()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("file", d.file().toString());
            m.put("offset", d.offset());
            m.put("what", d.what());
            damage.add(m);
        }
        r.put("result", damage.isEmpty() ? "clean" : damage.size() + " damaged spots");
        r.put("damage", damage);
        output.print(r);
        return damage.isEmpty() ? Main.OK : Main.DAMAGE;
    }
}
