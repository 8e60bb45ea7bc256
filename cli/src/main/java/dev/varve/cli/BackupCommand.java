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

    @Mixin
    NewStoreOptions newStore;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() throws IOException {
        newStore.checkEmpty();
        Map<String, Object> perTable = new LinkedHashMap<>();
        try (Varve s = store.openReadOnly(); ReadOptions.Source src = new ReadOptions.Source(s, asOf)) {
            int partitions = s.tables().isEmpty() ? 1 : s.table(s.tables().get(0)).partitions();
            try (Varve target = Varve.open(newStore.config(s.config().pageSize(), partitions))) {
                BatchWriter w = new BatchWriter(target);
                for (String name : s.tables()) {
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
        r.put("store", newStore.to.toString());
        r.put("asOf", asOf == null ? "current state" : asOf);
        r.put("entries", perTable);
        output.print(r);
        return Main.OK;
    }
}
