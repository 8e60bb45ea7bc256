package dev.varve.cli;

import dev.varve.engine.Cursor;
import dev.varve.engine.Partition;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import picocli.CommandLine.Option;

import java.util.List;

/** Which state a read command reads: the current one or a snapshot's, and how keys and values are written. */
final class ReadOptions {
    @Option(names = "--as-of", paramLabel = "ID", description = "Read the store as of this snapshot instead of its current state.")
    Long asOf;

    @Option(names = "--encoding", paramLabel = "ENC", defaultValue = "utf8",
            description = "How keys and values are written: ${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}); a key given as hex:... or "
                    + "base64:... is read so whatever this says.")
    Encoding encoding;

    /** Receives entries. */
    interface Entries {
        void entry(byte[] key, byte[] value) throws java.io.IOException;
    }

    /** The tables of a store, or of one of its snapshots; closes the snapshot view. */
    static final class Source implements AutoCloseable {
        private final Varve store;
        private final SnapshotView view;

        Source(Varve store, Long asOf) {
            // as backup --from and the HTTP API say it; asOf would only find no such snapshot
            if (asOf != null && asOf < 1) throw new IllegalArgumentException("--as-of must be >= 1, was " + asOf);
            this.store = store;
            this.view = asOf == null ? null : store.asOf(asOf);
        }

        /** The table {@code name}; an unknown name is refused rather than created. */
        Table table(String name) {
            List<String> tables = tables();
            if (!tables.contains(name)) throw new IllegalArgumentException((view == null ? "the store has no table '" + name + "'"
                    : "the store had no table '" + name + "' as of snapshot " + view.id()) + " (tables: " + tables + ")");
            return view == null ? store.table(name) : view.table(name);
        }

        /** The tables of what is read: the store's now, or those the snapshot holds. */
        List<String> tables() {
            return view == null ? store.tables() : view.tables();
        }

        /** Every entry of table {@code name} in [lo, hi) (null: open), in key order. */
        void forEach(String name, byte[] lo, byte[] hi, Entries sink) throws java.io.IOException {
            drain(table(name).scan(lo, hi), sink);
        }

        /** Every entry of one partition of a table in [lo, hi) (null: open), in key order. */
        void forEach(Partition partition, byte[] lo, byte[] hi, Entries sink) throws java.io.IOException {
            drain(partition.scan(lo, hi), sink);
        }

        private static void drain(Cursor cursor, Entries sink) throws java.io.IOException {
            try (Cursor c = cursor) {
                while (c.next()) sink.entry(c.key(), c.value());
            }
        }

        @Override
        public void close() {
            if (view != null) view.close();
        }
    }
}
