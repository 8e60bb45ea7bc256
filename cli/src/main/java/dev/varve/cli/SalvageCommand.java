package dev.varve.cli;

import picocli.CommandLine.Command;

import java.util.concurrent.Callable;

/** {@code varve salvage DIR --to NEWDIR}. */
@Command(name = "salvage", mixinStandardHelpOptions = true, description = "Copies what is still readable from a damaged store.")
final class SalvageCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        throw new UnsupportedOperationException("salvage");
    }
}
