// placeholder until the scenario component lands
