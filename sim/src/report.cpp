// placeholder until the report component lands
