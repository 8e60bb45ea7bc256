package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.StoreSalvager;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve salvage DIR --to NEWDIR}: what a damaged store still holds, into a new store. */
@Command(name = "salvage", mixinStandardHelpOptions = true,
        description = {"Copies every entry whose page still checks out from a damaged store into a new store directory, and reports what "
                + "was lost (file, offset, what). If the damaged store opens read-only it is recovered in memory first and each "
                + "partition is scanned, a partition that hits a bad page being finished from its page file; if it does not open, "
                + "every leaf page of every page file is read directly, once the pages of a checkpoint the crash interrupted are "
                + "restored (in memory) from its recovery files as recovery would (writes the WAL holds after the last checkpoint are then "
                + "lost, and listed; tables whose names were in a lost part of the catalog are salvaged as table-<id>). "
                + "The damaged store is not changed.", "Exit code 0: nothing lost; 1: something lost (listed); 2: nothing could be read."})
final class SalvageCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Mixin
    NewStoreOptions newStore;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() throws IOException {
        Main.refuseInsideSource("--to", newStore.to, store.dir, store.layout);
        newStore.checkEmpty();
        VarveConfig source = store.config();
        Map<String, Long> perTable = new LinkedHashMap<>();
        Map<String, Boolean> placedByCaller = new HashMap<>();
        List<Map<String, Object>> lost = new ArrayList<>();
        Varve[] target = {null};
        BatchWriter[] writer = {null};
        StoreSalvager.Result result;
        try {
            result = StoreSalvager.salvage(source, new StoreSalvager.Sink() {
                @Override
                public void table(String name, TableOptions options) {
                    if (target[0] == null) {
                        target[0] = openTarget(source);
                        writer[0] = new BatchWriter(target[0]);
                    }
                    target[0].table(name, options); // as it was: hash-placed with its partition count, or caller-placed
                    placedByCaller.put(name, options.callerPlaced());
                    perTable.put(name, 0L);
                }

                @Override
                public void entry(String table, int partition, byte[] key, byte[] value) {
                    // a caller-placed table's key may be in several partitions: each copy goes back to its own
                    writer[0].put(table, placedByCaller.get(table) ? partition : -1, key, value);
                    perTable.merge(table, 1L, Long::sum);
                }

                @Override
                public void lost(Path file, long offset, String what) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("file", file.toString());
                    m.put("offset", offset);
                    m.put("what", what);
                    lost.add(m);
                }
            });
            if (target[0] == null && result.opened()) target[0] = openTarget(source); // a sound store without tables: its copy is an empty store
            if (writer[0] != null) writer[0].flush();
            if (target[0] != null) {
                target[0].close();
                newStore.commit();
            }
        } catch (RuntimeException e) {
            try {
                if (target[0] != null) target[0].close(); // idempotent: a store closed before a failed commit is not closed again
            } catch (RuntimeException x) {
                e.addSuppressed(x);
            }
            newStore.discard(e); // no half-made copy left behind: the target was new or empty
            throw e;
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", newStore.to.toString());
        r.put("source", result.opened() ? "opened read-only (recovered in memory)" : "page files only; the store did not open: " + result.openFailure());
        r.put("entries", perTable);
        r.put("lost", lost);
        output.print(r);
        if (target[0] == null) return Main.UNUSABLE;
        // a store that did not open lost, besides what is listed, only writes its WAL held after the last checkpoint,
        // which are listed when there are any: nothing listed is nothing lost
        return lost.isEmpty() ? Main.OK : Main.DAMAGE;
    }

    /** Begins the new store and opens it with the source's layout: at its first table, or empty when it has none. */
    private Varve openTarget(VarveConfig source) {
        newStore.begin();
        return Varve.open(newStore.config(source.pageSize(), source.partitions()));
    }
}
