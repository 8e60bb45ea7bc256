package dev.varve.cli;

import dev.varve.config.ConfigLimits;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve load FILE --to NEWDIR}: a dump into a new store. */
@Command(name = "load", mixinStandardHelpOptions = true,
        description = {"Reads a dump file written by `varve dump` into a new store directory. The whole file is checked (structure, "
                + "checksum) before the store is created; the target must be new or empty."})
final class LoadCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The dump file.")
    Path file;

    @Mixin
    NewStoreOptions newStore;

    @Option(names = "--page-size", paramLabel = "BYTES", description = "Page size of the new store (default 4096; not with --new-config, whose file sets it).")
    Integer pageSize;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() throws IOException {
        if (pageSize != null && newStore.properties != null) // the file's page size won, silently
            throw new IllegalArgumentException("--page-size is not taken with --new-config: set varve.pageSize in " + newStore.properties);
        newStore.checkEmpty();
        int[] longestKey = {0};
        long entries = DumpFile.read(file, new DumpFile.Visitor() { // checks it all before anything is created
            @Override
            public void table(String name, TableOptions options) {
            }

            @Override
            public void entry(int partition, byte[] key, byte[] value) {
                longestKey[0] = Math.max(longestKey[0], key.length);
            }
        });
        Map<String, Object> perTable = new LinkedHashMap<>();
        newStore.build(() -> load(longestKey[0], perTable));
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("store", newStore.to.toString());
        r.put("entries", entries);
        r.put("perTable", perTable);
        output.print(r);
        return Main.OK;
    }

    /** Loads the checked dump into the new store, closed on return; {@code perTable} gets each table's entries. */
    private void load(int longestKey, Map<String, Object> perTable) throws IOException {
        try (Varve s = Varve.open(newStore.config(pageSize == null ? ConfigLimits.PAGE_SIZE_DEFAULT : pageSize, ConfigLimits.PARTITIONS_DEFAULT))) {
            if (longestKey > s.maxKeyBytes()) throw new IllegalArgumentException(file + " holds a key of " + longestKey + " bytes; a store of "
                    + s.config().pageSize() + "-byte pages takes keys of up to " + s.maxKeyBytes() + " bytes: raise --page-size");
            BatchWriter w = new BatchWriter(s);
            String[] current = {null};
            DumpFile.read(file, new DumpFile.Visitor() {
                @Override
                public void table(String name, TableOptions options) {
                    current[0] = name;
                    s.table(name, options); // with the placement and partition count it had; created even when empty
                    perTable.put(name, 0L);
                }

                @Override
                public void entry(int partition, byte[] key, byte[] value) {
                    w.put(current[0], partition, key, value); // -1: by key hash
                    perTable.merge(current[0], 1L, (a, b) -> (Long) a + (Long) b);
                }
            });
            w.flush();
        }
    }
}
