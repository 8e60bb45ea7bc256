package dev.varve.cli;

import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve backup DIR --as-of ID --to NEWDIR}: a snapshot as a new, ordinary store. */
@Command(name = "backup", mixinStandardHelpOptions = true,
        description = {"Writes a new, ordinary store directory whose current state equals the source store as of snapshot ID (without "
                + "--as-of: its current state). The new store opens with Varve.open and passes `varve verify`; it has no snapshots. "
                + "The source is opened read-only and does not change."})
final class BackupCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Option(names = "--as-of", paramLabel = "ID", description = "The snapshot to copy.")
    Long asOf;

    @Option(names = "--to", required = true, paramLabel = "NEWDIR", description = "The new store directory (new or empty).")
    Path to;

    @Option(names = "--new-config", paramLabel = "FILE", description = "A varve.* properties file for the new store (its path is NEWDIR).")
    Path newConfig;

    @Option(names = "--json", description = "The summary as one JSON object.")
    boolean json;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        NewStore.checkEmpty(to);
        Map<String, Object> perTable = new LinkedHashMap<>();
        try (Varve s = store.openReadOnly(); ReadOptions.Source src = new ReadOptions.Source(s, asOf)) {
            int partitions = s.tableNames().isEmpty() ? 1 : s.table(s.tableNames().get(0)).partitions();
            try (Varve target = Varve.open(NewStore.config(to, newConfig, s.config().pageSize(), partitions))) {
                BatchWriter w = new BatchWriter(target);
                for (String name : s.tableNames()) {
                    target.table(name);
                    long[] n = {0};
                    src.forEach(name, null, null, (k, v) -> {
                        w.put(name, k, v);
                        n[0]++;
                    });
                    perTable.put(name, n[0]);
                }
                w.flush();
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", to.toString());
        r.put("asOf", asOf == null ? "current state" : asOf);
        r.put("entries", perTable);
        Report.print(spec.commandLine().getOut(), r, json);
        return Main.OK;
    }
}
