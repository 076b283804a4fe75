"""A short NautilusTrader backtest with the twin's latency (run in .venv-backtest).

``python nautilus_fill.py NAUTILUS_LATENCY.json`` prints one JSON object. The market: AUD/USD
quotes every 10 us whose ask rises one pip (0.00001) a quote. The strategy sends one market buy
at 1 ms; the simulated venue sees it after the ``LatencyModel``'s insert latency (the twin's,
from ``twin replay --export nautilus``), so it fills at the ask of that later moment: the fill
price says how late the order arrived (``expected_px``, the ask at 1 ms plus the latency).

It imports nautilus_trader only (never the twin: its environment pins other versions).
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal

from nautilus_trader.backtest.engine import BacktestEngine, BacktestEngineConfig
from nautilus_trader.backtest.models import LatencyModel
from nautilus_trader.config import LoggingConfig, StrategyConfig
from nautilus_trader.model.currencies import USD
from nautilus_trader.model.data import QuoteTick
from nautilus_trader.model.enums import AccountType, OmsType, OrderSide
from nautilus_trader.model.identifiers import InstrumentId, TraderId, Venue
from nautilus_trader.model.objects import Money
from nautilus_trader.test_kit.providers import TestInstrumentProvider
from nautilus_trader.trading.strategy import Strategy

TICK_NS = 10_000
START_NS = 1_700_000_000_000_000_000
SEND_AT_NS = START_NS + 1_000_000
QUOTES = 20_000  # 200 ms of quotes
PIP = Decimal("0.00001")


class BuyOnce(Strategy):
    def __init__(self, instrument_id: InstrumentId, quantity: int) -> None:
        super().__init__(StrategyConfig(strategy_id="BUY-001"))
        self.instrument_id = instrument_id
        self.quantity = quantity
        self.sent = False

    def on_start(self) -> None:
        self.subscribe_quote_ticks(self.instrument_id)

    def on_quote_tick(self, tick: QuoteTick) -> None:
        if not self.sent and tick.ts_event >= SEND_AT_NS:
            self.sent = True
            instrument = self.cache.instrument(self.instrument_id)
            order = self.order_factory.market(
                self.instrument_id, OrderSide.BUY, instrument.make_qty(self.quantity)
            )
            self.submit_order(order)


def ask_at(ts: int) -> Decimal:
    return Decimal("0.70000") + PIP * ((ts - START_NS) // TICK_NS)


def main() -> None:
    config = json.loads(open(sys.argv[1]).read())
    latency = LatencyModel(**config["latency_model"])
    venue = Venue("SIM")
    instrument = TestInstrumentProvider.default_fx_ccy("AUD/USD", venue)
    engine = BacktestEngine(
        BacktestEngineConfig(
            trader_id=TraderId("BACKTESTER-001"), logging=LoggingConfig(bypass_logging=True)
        )
    )
    engine.add_venue(
        venue=venue,
        oms_type=OmsType.NETTING,
        account_type=AccountType.MARGIN,
        base_currency=USD,
        starting_balances=[Money(10_000_000, USD)],
        latency_model=latency,
    )
    engine.add_instrument(instrument)
    quotes = []
    for i in range(QUOTES):
        ts = START_NS + i * TICK_NS
        ask = ask_at(ts)
        quotes.append(
            QuoteTick(
                instrument_id=instrument.id,
                bid_price=instrument.make_price(ask - PIP),
                ask_price=instrument.make_price(ask),
                bid_size=instrument.make_qty(10_000_000),
                ask_size=instrument.make_qty(10_000_000),
                ts_event=ts,
                ts_init=ts,
            )
        )
    engine.add_data(quotes)
    engine.add_strategy(BuyOnce(instrument.id, 100_000))
    engine.run()
    fills = engine.trader.generate_order_fills_report()
    px = float(fills["avg_px"].iloc[0]) if len(fills) else None
    insert = config["latency_model"]["insert_latency_nanos"]
    base = config["latency_model"].get("base_latency_nanos", 0)
    expected = float(ask_at(SEND_AT_NS + base + insert))
    print(json.dumps({"fill_px": px, "expected_px": expected, "insert_ns": insert}))
    engine.dispose()


if __name__ == "__main__":
    main()
