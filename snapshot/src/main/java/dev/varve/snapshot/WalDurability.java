package dev.varve.snapshot;

/**
 * The store's WAL as the archive sees it: how far it is durable, and a force. A drop the retention policy makes
 * because of a declaration (or a rank raise, or the budget) must not outlive that record: made durable first, it
 * would stand after a crash that lost the record, and reclamation may already have deleted the dropped snapshot's
 * data — an acknowledged snapshot gone because of one that never happened. So the drop log writes no drop before
 * the record that caused it is durable ({@link DropLog}).
 */
public interface WalDurability {
    /** A standalone archive (no WAL): nothing waits. */
    WalDurability NONE = new WalDurability() {
        @Override
        public long durableLsn() {
            return Long.MAX_VALUE;
        }

        @Override
        public long position() {
            return 0;
        }

        @Override
        public void forceThrough(long lsn) {
        }
    };

    /** Every record below this LSN is durable against power loss. */
    long durableLsn();

    /** The end of every record appended so far. */
    long position();

    /** Returns once the record at {@code lsn}, and every one before it, is durable; {@link Long#MAX_VALUE}: everything appended. */
    void forceThrough(long lsn);
}
